"""The sandbox layer: Docker containers driven through aiodocker, with persistent sessions.

It knows nothing about tasks or rewards. See docs/ARCHITECTURE.md.
"""

from intercode_agents.sandbox.config import LABEL, RUN_ID, SandboxConfig
from intercode_agents.sandbox.engine import check_engine, close_docker_client, image_exists
from intercode_agents.sandbox.jsonl import JsonSession
from intercode_agents.sandbox.pool import SandboxPool
from intercode_agents.sandbox.registry import cleanup_containers, install_signal_handlers
from intercode_agents.sandbox.result import ExecResult
from intercode_agents.sandbox.sandbox import Change, Sandbox
from intercode_agents.sandbox.shell import ShellSession

__all__ = [
    "LABEL",
    "RUN_ID",
    "Change",
    "ExecResult",
    "JsonSession",
    "Sandbox",
    "SandboxConfig",
    "SandboxPool",
    "ShellSession",
    "check_engine",
    "cleanup_containers",
    "close_docker_client",
    "image_exists",
    "install_signal_handlers",
]

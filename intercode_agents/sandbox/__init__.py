"""The sandbox layer: isolated containers on a backend (the local Docker engine by default), with
persistent sessions, files, change lists, pools and clean-up.

It knows nothing about tasks or rewards. The backend contract (what an engine must do) is
:mod:`.contract`; choosing one is :mod:`.backends`; spreading sandboxes over several engines, and
keeping each engine's health, is :mod:`.placement`. A :class:`Sandbox` is its lifecycle, sessions,
commands and files (:mod:`.sandbox`) and its reading side, ``sb.forensics`` (:mod:`.forensics`). The
suite every backend must pass ships in :mod:`.conformance`. See docs/ARCHITECTURE.md.
"""

from intercode_agents.sandbox.backends import (
    BackendConfig,
    DockerConfig,
    PodmanConfig,
    check_engine,
    close_docker_client,
    close_engines,
    default_backend,
    image_exists,
    register_backend,
    resolve_backend,
)
from intercode_agents.sandbox.cleanup import cleanup_containers, install_signal_handlers
from intercode_agents.sandbox.config import LABEL, RUN_ID, SandboxConfig
from intercode_agents.sandbox.contract import Backend, Change, ChangeKind
from intercode_agents.sandbox.json_session import JsonSession
from intercode_agents.sandbox.path_states import PathState
from intercode_agents.sandbox.placement import EngineSet, resolve_engines
from intercode_agents.sandbox.pool import SandboxPool
from intercode_agents.sandbox.result import ExecResult
from intercode_agents.sandbox.sandbox import Sandbox
from intercode_agents.sandbox.shell import ShellSession

__all__ = [
    "LABEL",
    "RUN_ID",
    "Backend",
    "BackendConfig",
    "Change",
    "ChangeKind",
    "DockerConfig",
    "EngineSet",
    "ExecResult",
    "JsonSession",
    "PathState",
    "PodmanConfig",
    "Sandbox",
    "SandboxConfig",
    "SandboxPool",
    "ShellSession",
    "check_engine",
    "cleanup_containers",
    "close_docker_client",
    "close_engines",
    "default_backend",
    "image_exists",
    "install_signal_handlers",
    "register_backend",
    "resolve_backend",
    "resolve_engines",
]

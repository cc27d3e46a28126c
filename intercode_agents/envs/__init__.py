"""Environments: tasks become episodes (reset / step / submit) with rewards.

``base.py`` is the episode API every env implements; ``registry.py`` makes an env from its definition
(:mod:`intercode_agents.spec`); ``pooled_env.py`` and ``shared_pools.py`` are the sandbox machinery the
envs share. Each shipped family has one folder (``bash/``, ``sql/``, ``python/``, ``ctf/``) holding
its env class, reward maths, gold handling, task loading and guard rules; a user's env is the same
shape outside the package (``examples/custom_env/``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from intercode_agents.envs.base import ActionResult, Env
    from intercode_agents.envs.recorder import EpisodeRecorder
    from intercode_agents.envs.registry import make_env
    from intercode_agents.envs.steps import StepResult, Submit, read_action

# Imported on first use, so that a family's light modules (the Python scorer's check process imports
# ``envs.python.checks``) load without the env machinery.
_LAZY = {
    "ActionResult": "base",
    "Env": "base",
    "EpisodeRecorder": "recorder",
    "StepResult": "steps",
    "Submit": "steps",
    "make_env": "registry",
    "read_action": "steps",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"intercode_agents.envs.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["ActionResult", "Env", "EpisodeRecorder", "StepResult", "Submit", "make_env", "read_action"]

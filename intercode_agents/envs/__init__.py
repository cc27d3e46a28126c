"""Environments: tasks become episodes (reset / step / submit) with rewards.

``base.py`` is the episode API every env implements; ``registry.py`` makes an env from its definition
(:mod:`intercode_agents.spec`); ``pooled_env.py`` and ``shared_pools.py`` are the sandbox machinery the
envs share. Each shipped family has one folder (``bash/``, ``sql/``, ``python/``, ``ctf/``) holding
its env class, reward maths, gold handling, task loading and guard rules; a user's env is the same
shape outside the package (``examples/custom_env/``).
"""

from intercode_agents.envs.base import ActionResult, Env, parse_submit
from intercode_agents.envs.registry import make_env

__all__ = [
    "ActionResult",
    "Env",
    "make_env",
    "parse_submit",
]

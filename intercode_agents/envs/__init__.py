"""Environments: tasks become episodes (reset / step / submit) with rewards. See base.py, and
registry.py for env definitions (a user's env YAML)."""

from intercode_agents.envs.base import REWARD_MODES, ActionResult, Env, TaskDetails, parse_submit
from intercode_agents.envs.registry import EnvSpec, env_names, load_spec, make_env

__all__ = [
    "REWARD_MODES",
    "ActionResult",
    "Env",
    "EnvSpec",
    "TaskDetails",
    "env_names",
    "load_spec",
    "make_env",
    "parse_submit",
]

"""Environments: tasks become episodes (reset / step / submit) with rewards. See base.py."""

from intercode_agents.envs.base import REWARD_MODES, ActionResult, Env, parse_submit
from intercode_agents.envs.registry import env_names, load_spec, make_env

__all__ = ["REWARD_MODES", "ActionResult", "Env", "env_names", "load_spec", "make_env", "parse_submit"]

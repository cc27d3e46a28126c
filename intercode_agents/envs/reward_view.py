"""What an agent may see of a reward's parts: its state against the gold, never the gold.

A reward's parts explain a score to the user who reads the records, and some of them are the gold's
own contents: the paths the gold command changes (Bash ``missing_paths``), the size of the gold
query's result (SQL ``gold_rows``), how many hidden tests there are (Python ``tests``), whether the
gold sorts (SQL ``order_matters``). An agent that reads those learns the answer from the scorer
instead of the task. So everything that reaches an agent (the MCP server's answers, the tools'
artifacts, the human player's screen) goes through :func:`agent_parts`, which keeps only the parts
the reward's own allow-list names; the records keep every part.

The allow-lists hold the part scores and what they measure of the agent's own state: how many of its
changes the gold does not make and which (``extra_paths``, the agent's own paths), how alike its
output is, how many of its result rows match (``iou``, ``tau``, ``agent_rows``), how many tests it
passes. A part that describes only the gold side (a path, a count, a mode or owner, a flag of the
gold's) is never listed, nor is one that names a gold path the agent has not touched (Bash
``wrong_content_paths`` in strict mode names every file the gold changed, with the gold's mode and
owner). A part a reward adds later stays hidden until its list names it.

Each env class says which parts of its reward an agent may see in :attr:`Env.agent_parts
<intercode_agents.envs.base.Env.agent_parts>`. That list belongs to the reward it was written for:
it counts only when declared by the class whose ``_score`` computes the reward, or by a subclass of
it. A subclass that brings a reward of its own (the jq example's env, built on the Bash env) shows
none of its parts until it names them itself, so a part name it shares with the Bash reward can never
leak through Bash's list.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from intercode_agents.envs.base import Env

#: Parts the base env adds itself when the agent destroyed its own sandbox (every env).
SANDBOX_PARTS = frozenset({"sandbox_lost", "sandbox_lost_reason"})


def _defining(env_type: type[Env], name: str) -> type:
    """The class of ``env_type``'s hierarchy whose body defines ``name``."""
    return next(cls for cls in env_type.__mro__ if name in vars(cls))


def visible_parts(env: Env | type[Env]) -> frozenset[str]:
    """The names of the reward parts an agent of ``env`` may see (see the module docstring): the
    ``agent_parts`` of the class that computes the reward or of a subclass of it, never a list
    declared above a ``_score`` that replaced the one it was written for."""
    env_type = env if isinstance(env, type) else type(env)
    listed_for_this_reward = issubclass(_defining(env_type, "agent_parts"), _defining(env_type, "_score"))
    return SANDBOX_PARTS | (frozenset(env_type.agent_parts) if listed_for_this_reward else frozenset())


def agent_parts(env: Env | type[Env], parts: Mapping[str, Any]) -> dict[str, Any]:
    """The reward parts of ``env`` that its agent may see: those its reward's allow-list names."""
    shown = visible_parts(env)
    return {name: value for name, value in parts.items() if name in shown}

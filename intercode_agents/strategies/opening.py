"""A strategy's prompts for an episode whose policy runs outside the harness (a trainer's model).

An RL framework samples the model itself and hands the env its replies; the harness only says what
the model reads: the conversation an episode opens with (the strategy's system text with the env's
texts and demo, then the task) and the text each later turn shows (an observation, the last-turn
warning, why a reply held no action). They are the strategy's own templates, filled as
:class:`~intercode_agents.strategies.episode.EpisodeRun` fills them, so a policy trained through an
adapter reads what the same strategy shows it in an eval.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage

from intercode_agents.envs.base import Env
from intercode_agents.strategies.episode import prompt_values
from intercode_agents.strategies.prompts import PromptSet
from intercode_agents.strategies.registry import get_strategy


@dataclass(frozen=True)
class EpisodePrompts:
    """The prompts of one episode: :meth:`opening` and :meth:`render` (see the module docstring)."""

    prompts: PromptSet
    values: dict[str, Any]
    max_turns: int

    def opening(self) -> list[BaseMessage]:
        """The conversation the episode opens with: the system text, then the task."""
        filled = self.values | {"turns_left": self.max_turns}
        return self.prompts.conversation().format_messages(**filled, history=[])

    def render(self, name: str, *, turns_left: int, **values: Any) -> str:
        """The template ``name`` (``observation``, ``last_turn``, ``invalid``...) filled in."""
        return self.prompts.render(name, **(self.values | {"turns_left": turns_left} | values))


def episode_prompts(env: Env, query: str, strategy: str = "react", **settings: Any) -> EpisodePrompts:
    """The prompts ``strategy`` (configured by ``settings``: ``max_turns``, ``prompt_file``, ...) shows
    for the task ``env`` was reset to, whose question is ``query``."""
    chosen = get_strategy(strategy, **settings)
    values = prompt_values(env, chosen.prompts, chosen.config, query)
    return EpisodePrompts(chosen.prompts, values, chosen.config.max_turns)

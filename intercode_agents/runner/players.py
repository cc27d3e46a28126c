"""Who plays the episodes of a run: a strategy with a chat model, the gold policy, a replay, a human.

A player turns (env, task, seed) into a :class:`~intercode_agents.trajectory.Trajectory` and never
raises for env or model failures. ``strategy`` and ``model`` are the labels its records carry.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from langchain_core.language_models import BaseChatModel

from intercode_agents.datasets import Task
from intercode_agents.envs.base import Env
from intercode_agents.models import with_seed
from intercode_agents.runner.direct import DIRECT, gold_actions, play_direct, scripted
from intercode_agents.runner.human import TerminalHuman
from intercode_agents.strategies import Strategy
from intercode_agents.trajectory import Trajectory

SPECIAL_MODELS = ("gold", "human")


class Player(Protocol):
    @property
    def strategy(self) -> str: ...

    @property
    def model(self) -> str: ...

    async def play(self, env: Env, task: Task, seed: int | None) -> Trajectory: ...


@dataclass
class StrategyPlayer:
    """A prompting strategy (or a user's agent) driving a chat model; each episode samples with its
    own seed where the model takes one. ``chat_model`` is None for an agent that brings its own."""

    runner: Strategy
    chat_model: BaseChatModel | None
    model: str

    @property
    def strategy(self) -> str:
        return self.runner.name

    async def play(self, env: Env, task: Task, seed: int | None) -> Trajectory:
        chat = with_seed(self.chat_model, seed) if self.chat_model is not None else None
        return await self.runner.run(env, chat, task=task, seed=seed, model_name=self.model)


@dataclass
class GoldPlayer:
    """Replays each task's gold answer (see :func:`~intercode_agents.runner.direct.gold_actions`)."""

    strategy: str = DIRECT
    model: str = "gold"

    async def play(self, env: Env, task: Task, seed: int | None) -> Trajectory:
        return await play_direct(env, task, scripted(gold_actions(task, env)), model=self.model, seed=seed)


@dataclass
class ScriptPlayer:
    """Plays given actions per task id (a replay of recorded episodes)."""

    actions: dict[str, list[str]]
    strategy: str = DIRECT
    model: str = "replay"

    async def play(self, env: Env, task: Task, seed: int | None) -> Trajectory:
        return await play_direct(env, task, scripted(self.actions[task.id]), model=self.model, seed=seed)


@dataclass
class HumanPlayer:
    """A person at the terminal types each action; the turn budget ends with a forced submit."""

    max_turns: int | None = None
    terminal: TerminalHuman = field(default_factory=TerminalHuman)
    strategy: str = DIRECT
    model: str = "human"

    async def play(self, env: Env, task: Task, seed: int | None) -> Trajectory:
        self.terminal.show_task(task, env)
        traj = await play_direct(
            env,
            task,
            self.terminal.next_action(env),
            model=self.model,
            seed=seed,
            max_turns=self.max_turns,
            on_observation=self.terminal.show_observation,
        )
        self.terminal.show_result(traj, env)
        return traj

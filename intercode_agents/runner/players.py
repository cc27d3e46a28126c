"""Who plays the episodes of a run: a strategy with a chat model, the gold policy, a replay, a human.

A player turns (env, task, seed) into a :class:`~intercode_agents.trajectory.Trajectory` and never
raises for env or model failures. ``strategy`` and ``model`` are the labels its records carry.

**Players that travel.** A run on a Ray cluster (:mod:`intercode_agents.runner.ray`) plays on other
machines, so its player is sent there. The gold, script and log players are plain data and travel as
they are. A strategy player holds a chat model, which is a client of a provider, a loaded local model
or a user's object, and often cannot be pickled at all: :func:`make_player` keeps the
:class:`PlayerRecipe` it was made from (the model spec and settings, the strategy or agent and its
settings), and that recipe is what travels; each node builds its own player from it, so a provider
client, a local model's weights and a user's module are made (and found) on the node. A person at
the terminal (``human``) cannot play elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from langchain_core.language_models import BaseChatModel

from intercode_agents.datasets import Task
from intercode_agents.envs.base import Env
from intercode_agents.errors import ConfigError
from intercode_agents.models import with_seed
from intercode_agents.runner.direct import DIRECT, gold_actions, play_direct, scripted
from intercode_agents.runner.human import TerminalHuman
from intercode_agents.strategies import Strategy
from intercode_agents.trajectory import Trajectory
from intercode_agents.user_code import anchored

SPECIAL_MODELS = ("gold", "human")


class Player(Protocol):
    @property
    def strategy(self) -> str: ...

    @property
    def model(self) -> str: ...

    async def play(self, env: Env, task: Task, seed: int | None) -> Trajectory: ...


@dataclass(frozen=True)
class PlayerRecipe:
    """What :func:`make_player` was given: enough to make the same player again somewhere else."""

    model: str | BaseChatModel | None
    strategy: str | None
    turns: int
    agent: str | None = None
    strategy_settings: dict[str, Any] = field(default_factory=dict)
    model_settings: dict[str, Any] = field(default_factory=dict)

    def anchored(self) -> PlayerRecipe:
        """This recipe with its references to a user's files made absolute (see
        :func:`~intercode_agents.user_code.anchored`): what a Ray node is sent."""
        model = anchored(self.model) if isinstance(self.model, str) else self.model
        strategy = anchored(self.strategy) if self.strategy else self.strategy
        agent = anchored(self.agent) if self.agent else self.agent
        return replace(self, model=model, strategy=strategy, agent=agent)

    def build(self) -> Player:
        player, _ = make_player(
            self.model,
            self.strategy,
            turns=self.turns,
            agent=self.agent,
            strategy_settings=self.strategy_settings,
            model_settings=self.model_settings,
        )
        return player


@dataclass
class StrategyPlayer:
    """A prompting strategy (or a user's agent) driving a chat model; each episode samples with its
    own seed where the model takes one. ``chat_model`` is None for an agent that brings its own.
    ``recipe``: how it was made, when :func:`make_player` made it (what a Ray node is sent)."""

    runner: Strategy
    chat_model: BaseChatModel | None
    model: str
    recipe: PlayerRecipe | None = None

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


def make_player(
    model: str | BaseChatModel | None,
    strategy: str | None,
    *,
    turns: int,
    agent: str | None = None,
    strategy_settings: dict[str, Any] | None = None,
    model_settings: dict[str, Any] | None = None,
) -> tuple[Player, Any]:
    """The player of a run and its chat model (None for gold, human, and an agent without a model)."""
    special = model.strip() if isinstance(model, str) and model.strip() in SPECIAL_MODELS else None
    if special and agent:
        raise ConfigError(f"--agent plays with a chat model (or with its own), not with --model {special}")
    if special == "gold":
        return GoldPlayer(), None
    if special == "human":
        return HumanPlayer(max_turns=turns), None
    from intercode_agents.models import describe_model, resolve_model
    from intercode_agents.strategies import get_strategy
    from intercode_agents.strategies.agent import get_agent_strategy
    from intercode_agents.strategies.base import NO_MODEL

    settings = {"max_turns": turns, **(strategy_settings or {})}
    runner: Strategy
    recipe = PlayerRecipe(
        model, strategy, turns, agent, dict(strategy_settings or {}), dict(model_settings or {})
    )
    if agent:
        if strategy:
            raise ConfigError("pass either --agent or --strategy: an agent is its own strategy")
        runner = get_agent_strategy(agent, **settings)
        chat = resolve_model(model, **(model_settings or {})) if model is not None else None
        label = describe_model(chat)["name"] if chat is not None else NO_MODEL["name"]
        return StrategyPlayer(runner, chat, label, recipe), chat
    if model is None:
        raise ConfigError("a run needs --model (local, provider:model, gold, human, ...) or an --agent")
    if not strategy:
        raise ConfigError(
            "a chat model needs a strategy: pass --strategy try_again|react|plan_solve|tool_calling "
            "(or PATH.py:Class), or --agent PATH.py:FACTORY"
        )
    runner = get_strategy(strategy, **settings)
    chat = resolve_model(model, **(model_settings or {}))
    return StrategyPlayer(runner, chat, describe_model(chat)["name"], recipe), chat

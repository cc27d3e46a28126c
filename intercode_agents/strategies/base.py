"""The strategy base class: one episode of a chat model against an env, recorded as a Trajectory.

A strategy subclasses :class:`Strategy`, names itself, picks its prompts (``prompts/<name>.yaml``, or
another strategy's through ``prompt_set``), optionally extends the config model, and implements
:meth:`Strategy.solve`, which drives an :class:`~intercode_agents.strategies.episode.EpisodeRun`
until the episode is submitted or the turns run out. :meth:`Strategy.run` does the rest: reset, prompt
loading, a forced submit when ``solve`` returns without one, the episode deadline, and the outcome:

- after a submit, from the reward and its parts (:meth:`Trajectory.settle
  <intercode_agents.trajectory.Trajectory.settle>`): ``solved`` when the reward is 1.0, ``corrupt``
  when the task's gold cannot run, ``failed`` otherwise, and always ``failed`` when the agent
  destroyed its own sandbox (the env reports ``sandbox_lost`` instead of raising);
- ``env_error`` when the env raises (the harness or the engine failed; the message is in ``error``),
  ``model_error`` when the model provider keeps failing; ``timeout``, ``tokens_exhausted`` or
  ``cost_exhausted`` when a budget of the episode is spent (``episode_timeout_s``,
  ``episode_max_tokens``, ``episode_max_cost_usd``: see :mod:`.budget`). A model whose context
  window the episode filled is the agent's limit, not a provider failure: the episode is submitted
  as it stands (``context["context_exhausted"]`` is set).

The runner retries env and model errors (see :mod:`intercode_agents.runner.retries`).

Example::

    strategy = get_strategy("react", max_turns=8)
    async with make_env("bash") as env:
        trajectory = await strategy.run(env, model, task_id="bash/mini/0")
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar

from langchain_core.language_models import BaseChatModel

from intercode_agents.envs.base import Env
from intercode_agents.errors import ConfigError, UnknownTask
from intercode_agents.models import describe_model, resolve_model
from intercode_agents.models.calls import ModelCallFailed
from intercode_agents.strategies.budget import BudgetExhausted, EpisodeBudget, price_of
from intercode_agents.strategies.config import StrategyConfig, build_config
from intercode_agents.strategies.episode import ContextExhausted, EnvFailure, EpisodeRun
from intercode_agents.strategies.paper_loops import check_paper_env
from intercode_agents.strategies.prompts import PromptSet, load_prompts
from intercode_agents.trajectory import Trajectory

if TYPE_CHECKING:
    from intercode_agents.datasets import Task

#: How a record names the model of an episode played without one (a user's agent with its own).
NO_MODEL: dict[str, Any] = {"name": "agent-default", "settings": {}}


class Strategy(ABC):
    """Base class of the prompting strategies (see the module docstring)."""

    name: str  # set by each class; an instance may refine it (an agent names its factory)
    config_model: ClassVar[type[StrategyConfig]] = StrategyConfig
    templates: ClassVar[tuple[str, ...]] = ("system", "task")  # templates the prompt file must define
    paper_templates: ClassVar[tuple[str, ...]] = ()  # those of the paper's loop; () where there is none
    prompt_set: ClassVar[str | None] = None  # use the prompts of another strategy (default: ``name``)

    def __init__(self, config: StrategyConfig | None = None, **settings: Any) -> None:
        if config is not None and settings:
            raise ConfigError("pass either a config object or keyword settings, not both")
        if config is not None and not isinstance(config, self.config_model):
            raise ConfigError(f"the {self.name} strategy takes a {self.config_model.__name__}")
        self.config = config or build_config(self.config_model, self.name, settings)
        self.prompts: PromptSet = load_prompts(
            self.prompt_set or self.name, self.config.prompt_file, self.config.prompts
        )
        if self.prompts.style == "paper":
            self._check_paper_style()
        else:
            self.prompts.require(*self.templates)

    def _check_paper_style(self) -> None:
        """The paper's loops exist for some strategies only, and keep the paper's context rules."""
        if not self.paper_templates:
            raise ConfigError(
                f"{self.prompts.source} has style 'paper', but the {self.name} strategy has no paper loop "
                "(react and plan_solve have one)"
            )
        self.prompts.require(*self.paper_templates)
        unused = [name for name in ("history_turns", "show_budget") if getattr(self.config, name)]
        if unused:
            raise ConfigError(
                f"{', '.join(unused)} cannot be used with the paper's prompts: its loops show the whole "
                "history and no budget"
            )

    def episode(self, **parts: Any) -> EpisodeRun:
        """The run object of one episode (a strategy may return a subclass, as ``guarded`` does)."""
        return EpisodeRun(**parts)

    @abstractmethod
    async def solve(self, run: EpisodeRun) -> None:
        """Drive the episode until it is submitted or ``run.turns_left`` is 0."""

    def context(self) -> dict[str, Any]:
        """Settings recorded in ``Trajectory.context`` (subclasses may add their own)."""
        return {
            "max_turns": self.config.max_turns,
            "observation_limit": self.config.observation_limit,
            "history_turns": self.config.history_turns,
            "budgets": {
                "turns": self.config.max_turns,
                "tokens": self.config.episode_max_tokens,
                "cost_usd": self.config.episode_max_cost_usd,
                "seconds": self.config.episode_timeout_s,
                "shown_to_model": self.config.show_budget,
            },
            "prompt_file": self.prompts.source,
            "prompt_style": self.prompts.style,
            "config": self.config.model_dump(),
        }

    async def run(
        self,
        env: Env,
        model: BaseChatModel | str | None,
        *,
        task_id: str | None = None,
        task: Task | None = None,
        seed: int | None = None,
        model_name: str | None = None,
    ) -> Trajectory:
        """Play one episode of ``task_id`` (or ``task``) on ``env`` with ``model``; never raises for
        env or model failures (they become the outcome), only for bad arguments."""
        if self.prompts.style == "paper":
            check_paper_env(env)
        chat_model = self.resolve(model)
        described = describe_model(chat_model) if chat_model is not None else NO_MODEL
        started, clock = time.time(), time.perf_counter()
        trajectory = Trajectory(
            task_id=task.id if task is not None else task_id or "",
            env=env.name,
            strategy=self.name,
            model=model_name or described["name"],
            model_settings=described["settings"],
            seed=seed,
            reward_mode=env.reward_mode,
            execution=env.execution,
            context=self.context() | {"language": env.language},
            started_at=started,
        )
        budget = self.budget(trajectory.model, started_at=clock)
        try:
            async with asyncio.timeout(self.config.episode_timeout_s):
                await self._play(env, chat_model, trajectory, budget, task_id=task_id, task=task)
        except TimeoutError:
            trajectory.outcome = "timeout"
            trajectory.error = f"the episode took longer than {self.config.episode_timeout_s:g} s"
        except BudgetExhausted as exc:
            trajectory.outcome, trajectory.error = exc.outcome, str(exc)
        except ModelCallFailed as exc:
            trajectory.outcome, trajectory.error = "model_error", str(exc)
        except EnvFailure as exc:
            trajectory.outcome, trajectory.error = "env_error", str(exc)
        else:
            trajectory.settle()
        trajectory.duration_s = time.perf_counter() - clock
        return trajectory

    def resolve(self, model: BaseChatModel | str | None) -> BaseChatModel | None:
        """The chat model of ``model`` (a spec or an instance); strategies that can play without one
        (a user's agent that brings its own) return None for None."""
        return resolve_model(model)  # type: ignore[arg-type]  # None is a ConfigError there

    def budget(self, model_name: str, *, started_at: float | None = None) -> EpisodeBudget:
        """The token, cost and time budgets of an episode of ``model_name`` (ConfigError when a cost
        budget is set for a model without a known price)."""
        cost = self.config.episode_max_cost_usd
        budget = EpisodeBudget(
            max_tokens=self.config.episode_max_tokens,
            max_cost_usd=cost,
            max_seconds=self.config.episode_timeout_s,
            price=price_of(model_name) if cost is not None else None,
        )
        if started_at is not None:
            budget.started = started_at
        return budget

    async def _play(
        self,
        env: Env,
        model: BaseChatModel | None,
        trajectory: Trajectory,
        budget: EpisodeBudget,
        *,
        task_id: str | None,
        task: Task | None,
    ) -> None:
        try:
            query, info = await env.reset(task_id, task=task)
        except (ConfigError, UnknownTask):
            raise
        except Exception as exc:
            raise EnvFailure(f"env reset failed: {type(exc).__name__}: {exc}") from exc
        trajectory.task_id = info.get("task_id", trajectory.task_id)
        trajectory.question = query
        trajectory.group = dict(info.get("group") or {})
        trajectory.image_id = getattr(env, "image_id", None) or info.get("image")
        run = self.episode(
            env=env,
            model=model,
            config=self.config,
            prompts=self.prompts,
            trajectory=trajectory,
            query=query,
            budget=budget,
        )
        await run.begin()
        thought = None
        try:
            await self.solve(run)
        except ContextExhausted as exc:
            trajectory.context["context_exhausted"] = True
            thought = f"the model's context window is full ({exc}): the episode is submitted as it stands"
        if not env.done:
            await run.submit(forced=True, thought=thought)

"""A user's LangChain agent as a strategy: ``--agent PATH.py:FACTORY`` or ``--agent package.module:FACTORY``.

The factory is called once per episode as ``factory(tools, model, task)`` (it may be async) and returns
any Runnable that takes messages: a ``create_agent`` graph, a LangGraph graph or a chain.

- ``tools`` are the episode's tools (``run_<language>`` and ``submit``), wrapped so that the harness
  counts, refuses and records every call (:mod:`.agent_episode`);
- ``model`` is the chat model given by ``--model``, resolved as for every strategy (an episode's
  copy, with its seed where it takes one), or None when no model is given (the factory brings its own);
- ``task`` is the task's public view, a :class:`~intercode_agents.datasets.PublicTask` (``id``, ``env``,
  ``split``, ``query`` and ``fields``, such as Python's ``entry_point``): never its gold or tests. The
  tools expose nothing of the episode either (see :class:`.agent_episode.EpisodeTool`).

The agent gets the task's question as its one user message (``{"messages": [...]}`` where its input
schema has ``messages``, else the list itself), with callbacks that record its model calls and a
LangGraph recursion limit. The harness does not trust it to stop:

- the turn budget counts tool calls; once it is spent, and once the agent submits or the env fails,
  the agent is cancelled (tools refuse every later call, model calls are refused too);
- token and cost budgets are checked before each model call the callbacks see; a spent one ends the
  episode (``tokens_exhausted`` / ``cost_exhausted``);
- the episode has a wall-clock limit (``episode_timeout_s``, 600 s unless set; outcome ``timeout``).

When the agent ends (or is stopped) without submitting, the runner submits the episode as it stands.
A recursion limit reached and an exception of the agent's own are the agent's: the episode is
submitted and scored (the latter tagged ``agent_crashed``). A model call the callbacks saw fail is a
``model_error`` (any other exception is the agent's, whatever its type), a full context window
``context_exhausted``, an env failure an ``env_error``. Errors the factory raises, and a factory that
returns no Runnable, are :class:`~intercode_agents.errors.ConfigError` s that name its file.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage
from langchain_core.runnables import Runnable, RunnableConfig
from pydantic import Field

from intercode_agents.errors import ConfigError
from intercode_agents.models import resolve_model
from intercode_agents.models.calls import ModelCallFailed
from intercode_agents.strategies.agent_episode import (
    SUBMITTED,
    TURNS_SPENT,
    AgentGate,
    AgentStopped,
    EpisodeTool,
    ModelRecorder,
)
from intercode_agents.strategies.base import Strategy
from intercode_agents.strategies.budget import BudgetExhausted
from intercode_agents.strategies.config import StrategyConfig
from intercode_agents.strategies.episode import FORCED_SUBMIT, ContextExhausted, EpisodeRun, context_full
from intercode_agents.tools.env_tools import EnvToolkit, env_lock
from intercode_agents.user_code import describe, load_object

AGENT_ENDED = "the agent ended without submitting: the episode is submitted as it stands"
AGENT_ENDED_ITSELF = "the agent ended"
AgentFactory = Callable[..., Any]


class AgentConfig(StrategyConfig):
    """Settings of a user's agent: the shared ones, a default wall-clock limit and the recursion limit."""

    episode_timeout_s: float | None = Field(
        default=600.0, gt=0, description="wall-clock limit of an episode (outcome timeout)"
    )
    recursion_limit: int | None = Field(
        default=None, ge=1, description="LangGraph super-steps per episode; None: 3 * max_turns + 10"
    )
    stop_grace_s: float = Field(
        default=5.0, ge=0, description="seconds a stopped agent gets to wind down before it is left"
    )


def agent_input(agent: Runnable[Any, Any], question: str) -> Any:
    """The agent's input: ``{"messages": [...]}`` where its input schema has ``messages``, else the list."""
    messages = [HumanMessage(content=question)]
    try:
        schema = agent.get_input_jsonschema()
    except Exception:  # a Runnable whose schema cannot be built takes the list
        schema = {}
    return {"messages": messages} if "messages" in (schema.get("properties") or {}) else messages


def _source_file(obj: object) -> str | None:
    try:
        return inspect.getsourcefile(obj)  # type: ignore[arg-type]
    except TypeError:  # a builtin, a partial: no file of its own
        return None


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not e for e in seen):
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


class AgentStrategy(Strategy):
    """Plays episodes with the agent a user's factory builds (see the module docstring)."""

    name = "agent"
    config_model = AgentConfig
    templates = ()
    prompt_set = "tool_calling"  # only its per-env texts are used (the submit candidate, the values)

    def __init__(
        self, factory: str | AgentFactory, config: AgentConfig | None = None, **settings: Any
    ) -> None:
        if isinstance(factory, str):
            loaded = load_object(factory, "agent factory")
            self.factory, self.ref, self.file = loaded.obj, factory, loaded.file
            label, source = loaded.label, loaded.source
        else:
            self.factory, self.file = factory, _source_file(factory)
            label = f"{getattr(factory, '__module__', '?')}:{getattr(factory, '__qualname__', '?')}"
            self.ref = source = label
        self.source = source
        self._check_signature()
        self.name = f"agent:{label}"
        super().__init__(config, **settings)

    def _check_signature(self) -> None:
        if not callable(self.factory):
            raise ConfigError(
                f"agent factory {self.ref!r} is a {type(self.factory).__name__}, not a function; "
                "define build(tools, model, task) returning a Runnable"
            )
        try:
            inspect.signature(self.factory).bind(["tools"], "model", "task")
        except TypeError as exc:
            raise ConfigError(
                f"agent factory {self.ref!r} ({self.source}) must take (tools, model, task): {exc}"
            ) from None
        except ValueError:  # no signature to read (a builtin): let the call tell
            pass

    def context(self) -> dict[str, Any]:
        limit = self.recursion_limit()
        return super().context() | {
            "agent": {"factory": self.ref, "source": self.source},
            "recursion_limit": limit,
        }

    def recursion_limit(self) -> int:
        config = self.config
        assert isinstance(config, AgentConfig)
        return config.recursion_limit or 3 * config.max_turns + 10

    def resolve(self, model: BaseChatModel | str | None) -> BaseChatModel | None:
        return None if model is None else resolve_model(model)

    async def solve(self, run: EpisodeRun) -> None:
        gate = AgentGate(run)
        recorder = ModelRecorder(gate)
        toolkit = EnvToolkit(env=run.env, observation_limit=self.config.observation_limit)
        tools = [EpisodeTool.wrap(tool, gate) for tool in toolkit.get_tools()]
        agent = await self._build(tools, self._episode_model(run.model, recorder), run)
        config: RunnableConfig = {
            "callbacks": [recorder],
            "recursion_limit": self.recursion_limit(),
            "run_name": self.name,
        }
        playing = asyncio.create_task(agent.ainvoke(agent_input(agent, run.values["query"]), config))
        try:
            error = await self._until_done(playing, gate)
        finally:
            stopped_by = gate.stop_reason
            await self._stop(playing)
            gate.close()
        run.trajectory.context["agent_stop"] = stopped_by or AGENT_ENDED_ITSELF
        run.trajectory.context["model_calls_seen"] = gate.model_calls
        await self._end(run, gate, error)

    @staticmethod
    def _episode_model(model: BaseChatModel | None, recorder: ModelRecorder) -> BaseChatModel | None:
        """The episode's copy of the model, which reports its calls to ``recorder`` itself."""
        if model is None:
            return None
        callbacks = model.callbacks
        if callbacks is not None and not isinstance(callbacks, list):
            return model  # a callback manager of the user's own: the run's callbacks still see the calls
        return model.model_copy(update={"callbacks": [*(callbacks or []), recorder]})

    async def _build(
        self, tools: list[Any], model: BaseChatModel | None, run: EpisodeRun
    ) -> Runnable[Any, Any]:
        where = f"agent factory {self.ref!r} ({self.source})"
        try:
            task = run.env.task
            made = self.factory(tools, model, None if task is None else task.public())
            if inspect.isawaitable(made):
                made = await made
        except Exception as exc:
            raise ConfigError(f"{where} raised {describe(exc, self.file)}") from exc
        if not isinstance(made, Runnable):
            raise ConfigError(
                f"{where} returned a {type(made).__name__}, not a Runnable "
                "(return a create_agent graph, a compiled LangGraph graph or a chain)"
            )
        return made

    async def _until_done(self, playing: asyncio.Task[Any], gate: AgentGate) -> BaseException | None:
        """Wait until the agent ends or the gate stops it; the agent's own exception, if any."""
        stop = asyncio.create_task(gate.stopped.wait())
        try:
            await asyncio.wait({playing, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
        if playing.done() and not playing.cancelled():
            return playing.exception()
        return None

    async def _stop(self, playing: asyncio.Task[Any]) -> None:
        """Cancel the agent if it still runs, and give it ``stop_grace_s`` to wind down."""
        if playing.done():
            return
        playing.cancel()
        config = self.config
        assert isinstance(config, AgentConfig)
        await asyncio.wait({playing}, timeout=config.stop_grace_s)
        if playing.done() and not playing.cancelled():
            playing.exception()  # retrieved: an exception on the way out is no concern of the episode

    async def _end(self, run: EpisodeRun, gate: AgentGate, error: BaseException | None) -> None:
        """Turn how the agent ended into the episode's end (see the module docstring)."""
        if gate.env_failure is not None:
            raise gate.env_failure
        if gate.budget_spent is not None:
            raise BudgetExhausted(gate.budget_spent.outcome, str(gate.budget_spent))
        thought = FORCED_SUBMIT if gate.stop_reason == TURNS_SPENT else AGENT_ENDED
        chain = _chain(error) if error is not None else []
        if error is not None and not any(isinstance(e, AgentStopped) for e in chain):
            if any(type(e).__name__ == "GraphRecursionError" for e in chain):
                run.trajectory.context["recursion_limit_reached"] = True
                thought = (
                    f"the agent reached its recursion limit ({self.recursion_limit()} steps): {AGENT_ENDED}"
                )
            elif context_full(error):
                raise ContextExhausted(str(error)) from error
            elif any(e is seen for e in chain for seen in gate.model_errors):
                # only a failure the callbacks saw a model call raise excludes the episode: an error of
                # the agent's own (a TimeoutError of its own deadline, say) never does
                raise ModelCallFailed(
                    f"the agent's model call failed ({type(error).__name__}: {error})"
                ) from error
            else:
                crash = describe(error, self.file)
                run.trajectory.context["agent_error"] = crash
                run.trajectory.error = f"the agent raised {crash}"
                thought = f"the agent raised an error: {AGENT_ENDED}"
        if not run.env.done and gate.stop_reason != SUBMITTED:
            async with env_lock(run.env):  # after any tool call the agent may still have in flight
                await run.submit(forced=True, thought=thought)


def get_agent_strategy(factory: str | AgentFactory, **settings: Any) -> AgentStrategy:
    """The strategy that plays a user's agent; ``settings`` are :class:`AgentConfig` fields."""
    return AgentStrategy(factory, **settings)

"""The state of one strategy run, and the operations every strategy is built from.

An :class:`EpisodeRun` wraps an env that was just reset, the chat model and the strategy's prompts. It
asks the model (with retries and token accounting), parses replies, runs actions, scores and submits,
and records every turn as a :class:`~intercode_agents.trajectory.Step`. Env failures surface as
:class:`EnvFailure` and model failures as :class:`~intercode_agents.models.calls.ModelCallFailed`,
which the strategy base class turns into the trajectory's outcome. A model whose context window the
episode has filled raises :class:`ContextExhausted` instead: that is a limit of the agent under test,
not a provider failure, so the episode is submitted as it stands and scored.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.prompts import PromptTemplate
from langchain_core.runnables import Runnable

from intercode_agents.envs.base import Env
from intercode_agents.envs.recorder import EpisodeRecorder
from intercode_agents.envs.steps import StepResult
from intercode_agents.errors import ConfigError, IntercodeError
from intercode_agents.models.calls import ModelCallFailed, ModelReply, call_model, is_transient
from intercode_agents.models.tokens import reported_tokens
from intercode_agents.strategies.budget import EpisodeBudget
from intercode_agents.strategies.config import StrategyConfig
from intercode_agents.strategies.parsing import InvalidReply, ParsedAction, ParseResult, parse_reply
from intercode_agents.strategies.prompts import PromptSet
from intercode_agents.tools.env_tools import TURN_LIMIT_NOTE, tool_language
from intercode_agents.tools.observation import model_view
from intercode_agents.trajectory import Step, Trajectory, TurnTokens
from intercode_agents.trajectory import is_full as is_full  # strategies import it from here

FORCED_SUBMIT = "the turn budget is spent: the episode is submitted as it stands"
# What providers and llama.cpp say when a prompt no longer fits the model's context window.
_CONTEXT_FULL = re.compile(
    r"context[ _](?:length|size|window)|maximum context|context_length_exceeded|prompt is too long"
    r"|too many (?:input )?tokens|exceeds? the (?:available |maximum )?context",
    re.IGNORECASE,
)
T = TypeVar("T")


class EnvFailure(IntercodeError):
    """The environment raised while a strategy drove it (reset, step, evaluate or submit)."""


class ContextExhausted(IntercodeError):
    """The episode's prompt no longer fits the model's context window (the agent's own limit)."""


def context_full(exc: BaseException) -> bool:
    """Whether ``exc`` (or an exception it came from) says the prompt exceeds the context window.

    A transient error (a rate limit, say, which may speak of tokens too) is the provider's, never this.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if is_transient(current):
            return False
        if _CONTEXT_FULL.search(str(current)) or "ContextWindowExceeded" in type(current).__name__:
            return True
        current = current.__cause__ or current.__context__
    return False


_STEP_KINDS = ("action", "invalid", "refused", "rollback")


@dataclass(frozen=True)
class TurnResult:
    """What one model turn led to; ``feedback`` is the observation as the model should see it."""

    kind: str  # the step's kind: "action" | "submit" | "invalid" | "refused" | "rollback" | "vetoed"
    feedback: str
    step: Step
    reward: float | None = None
    done: bool = False
    from_parser: bool = False  # no action could be read: ``feedback`` is already the reply to the model


def _fill(text: str, values: dict[str, Any]) -> str:
    """Fill a per-env text; they are templates too (``{entry_point}``)."""
    template = PromptTemplate.from_template(text)
    return template.format(**{key: values.get(key, "") for key in template.input_variables})


def prompt_values(env: Env, prompts: PromptSet, config: StrategyConfig, query: str) -> dict[str, Any]:
    """The fields a strategy's templates are filled from, for the task ``env`` was reset to (its
    question ``query``): the env's texts, the turn budget, the demo, the entry point Python's tests call."""
    task = env.task
    entry_point = str(task.meta.get("entry_point") or "") if task is not None else ""
    texts = prompts.language(env.name, env.prompt_texts)
    values: dict[str, Any] = {
        "query": query,
        "language_name": texts.name,
        "environment": "",
        "submit": "",
        "max_turns": config.max_turns,
        "demo": prompts.demo_block(env.name) if config.demos else "",
        "entry_point": entry_point,
        "entry_point_note": "",
        "run_tool": f"run_{tool_language(env)}",
        "env_name": env.name,
    }
    values["environment"] = _fill(texts.environment, values)
    values["submit"] = _fill(texts.submit, values)
    if entry_point and texts.entry_point and f"`{entry_point}`" not in query:
        values["entry_point_note"] = "\n" + _fill(texts.entry_point, values)
    return values


class EpisodeRun:
    """One episode driven by a strategy. Create it through :meth:`Strategy.run`."""

    def __init__(
        self,
        *,
        env: Env,
        model: BaseChatModel | None,
        config: StrategyConfig,
        prompts: PromptSet,
        trajectory: Trajectory,
        query: str,
        budget: EpisodeBudget | None = None,
    ) -> None:
        self.env, self.model, self.config, self.prompts = env, model, config, prompts
        self.trajectory = trajectory
        self.recorder = EpisodeRecorder(
            env, strategy=trajectory.strategy, model=trajectory.model, trajectory=trajectory
        )
        self.budget = budget or EpisodeBudget()
        self.turns_used = 0
        self.turn_limit_reached = False
        self.actions: list[str] = []
        self.observations: list[str] = []
        self.values: dict[str, Any] = prompt_values(env, prompts, config, query)

    async def begin(self) -> None:
        """Called once the env was reset, before the strategy's ``solve`` (a hook for subclasses)."""

    # -- budget ---------------------------------------------------------------------------------
    @property
    def turns_left(self) -> int:
        return 0 if self.turn_limit_reached else max(self.config.max_turns - self.turns_used, 0)

    @property
    def done(self) -> bool:
        return self.env.done

    def budget_notes(self) -> tuple[str, ...]:
        """What is left of the budgets, for the model's observation (with ``show_budget``)."""
        return (self.budget.note(self.trajectory, self.turns_left),) if self.config.show_budget else ()

    # -- prompts and the model ----------------------------------------------------------------
    @property
    def chat_model(self) -> BaseChatModel:
        """The episode's chat model, for strategies that ask one (only an agent that brings its own
        plays without)."""
        if self.model is None:
            raise ModelCallFailed("the episode has no chat model to ask")
        return self.model

    def render(self, name: str, **values: Any) -> str:
        return self.prompts.render(name, **(self.values | {"turns_left": self.turns_left} | values))

    def messages(
        self,
        history: Sequence[Sequence[BaseMessage]] = (),
        *,
        pinned: Sequence[BaseMessage] = (),
        **values: Any,
    ) -> list[BaseMessage]:
        """System text, task, the ``pinned`` messages (a plan, say), then the last ``history_turns``
        turns of ``history`` (one list of messages per turn)."""
        window = list(history)
        if self.config.history_turns is not None:
            window = window[-self.config.history_turns :]
        flat = [*pinned, *(message for turn in window for message in turn)]
        filled = self.values | {"turns_left": self.turns_left} | values
        return self.prompts.conversation().format_messages(**filled, history=flat)

    async def ask(
        self, messages: Sequence[BaseMessage], model: Runnable[Any, Any] | None = None
    ) -> ModelReply:
        """One model call (retried on transient errors); its tokens count towards the trajectory.

        Raises :class:`~intercode_agents.strategies.budget.BudgetExhausted` when the episode's token or
        cost budget is spent, and :class:`ContextExhausted` when the prompt does not fit the model's
        context window."""
        self.budget.check(self.trajectory)
        chat = model if model is not None else self.model
        if chat is None:
            raise ConfigError("this strategy asks a chat model, and the episode has none")
        if self.config.record_tokens:
            chat = chat.bind(logprobs=True)  # the convention of models.tokens: report the tokens
        try:
            reply = await call_model(
                chat,
                messages,
                retries=self.config.model_retries,
                initial_wait_s=self.config.retry_initial_wait_s,
                max_wait_s=self.config.retry_max_wait_s,
            )
        except ModelCallFailed as exc:
            if context_full(exc):
                raise ContextExhausted(str(exc)) from exc
            raise
        self.trajectory.input_tokens += reply.input_tokens
        self.trajectory.output_tokens += reply.output_tokens
        if self.config.record_tokens:
            self._keep_tokens(reply)
        return reply

    def _keep_tokens(self, reply: ModelReply) -> None:
        """Keep the call's token ids (``record_tokens``); a reply that reports none is counted in the
        record's context, so a reader knows the token record has a gap."""
        found = reported_tokens(reply.message)
        if found is None:
            context = self.trajectory.context
            context["calls_without_tokens"] = context.get("calls_without_tokens", 0) + 1
            return
        self.trajectory.turn_tokens.append(
            TurnTokens(
                turn=self.turns_used + 1,
                prompt_ids=found.prompt_ids,
                completion_ids=found.completion_ids,
                logprobs=found.logprobs,
                finish_reason=found.finish_reason,
            )
        )

    def parse(self, text: str) -> ParseResult:
        return parse_reply(text, language=self.env.action_language)

    # -- turns ----------------------------------------------------------------------------------
    async def take_turn(self, reply: ModelReply, *, score: bool = False) -> TurnResult:
        """Parse ``reply`` and carry it out: an invalid step, a submit, or an action (scored if asked)."""
        parsed = self.parse(reply.text)
        if isinstance(parsed, InvalidReply):
            return self.invalid(reply.text, parsed.reason, thought=parsed.thought, reply=reply)
        return await self.carry_out(parsed, reply=reply, score=score)

    async def carry_out(
        self, parsed: ParsedAction, *, reply: ModelReply | None = None, score: bool = False
    ) -> TurnResult:
        if parsed.is_submit:
            return await self.submit(parsed.submit_argument, thought=parsed.thought, reply=reply)
        return await self.act(parsed.action, thought=parsed.thought, reply=reply, score=score)

    def invalid(
        self,
        text: str,
        reason: str,
        *,
        thought: str | None = None,
        reply: ModelReply | None = None,
        feedback: str | None = None,
    ) -> TurnResult:
        """Record a reply without a usable action; the feedback tells the model why."""
        self.count_turn()
        feedback = feedback if feedback is not None else self.render("invalid", reason=reason)
        step = self.recorder.note(
            "invalid",
            text,
            feedback,
            turn=self.turns_used,
            errored=True,
            thought=thought,
            tokens=_tokens(reply),
        )
        return TurnResult("invalid", feedback, step, from_parser=True)

    async def act(
        self, action: str, *, thought: str | None = None, reply: ModelReply | None = None, score: bool = False
    ) -> TurnResult:
        """Run ``action``; with ``score`` also evaluate the state it leaves (Try Again)."""
        self.count_turn()
        result = await self._env_call("step", self.env_step(action))
        self.turn_limit_reached = self.turn_limit_reached or result.truncated
        kind = result.kind if result.kind in _STEP_KINDS else "action"
        if kind == "action":
            self.actions.append(action)
            self.observations.append(result.observation)
        view = model_view(
            result.observation,
            self.config.observation_limit,
            exit_code=result.exit_code,
            timed_out=result.timed_out,
            notes=((TURN_LIMIT_NOTE,) if result.truncated else ()) + self.budget_notes(),
        )
        reward = await self.evaluate() if score and kind == "action" else None
        step = self.recorder.step(
            result,
            action,
            turn=self.turns_used,
            shown=view.text,
            shown_truncated=view.truncated,
            reward=reward,
            thought=thought,
            tokens=_tokens(reply),
        )
        return TurnResult(kind, view.text, step, reward=reward)

    def env_step(self, command: str) -> Awaitable[StepResult]:
        """The env's step for ``command`` (the guarded strategy puts its guard here)."""
        return self.env.step(command)

    def env_submit(self, answer: str, *, forced: bool = False) -> Awaitable[StepResult]:
        """The env's submit (the guarded strategy puts its guard here). ``forced``: a submit the
        strategy makes because the turns ran out."""
        return self.env.submit(answer)

    async def evaluate(self) -> float:
        """The reward of the current state, as if submitted now; the episode goes on."""
        candidate = self.submission_candidate()
        if self.env.submit_takes_argument and not candidate:
            return 0.0  # no function defined or no flag seen yet: nothing to score
        result = await self._env_call("evaluate", self.env.evaluate(candidate))
        return float(result.reward)

    async def submit(
        self,
        argument: str | None = None,
        *,
        thought: str | None = None,
        reply: ModelReply | None = None,
        forced: bool = False,
    ) -> TurnResult:
        """End the episode. A model's own submit uses a turn; a forced one (budget spent) does not."""
        if not forced:
            self.count_turn()
        if not argument and self.env.submit_takes_argument:
            argument = self.submission_candidate()
        action = f"submit {argument}" if argument else "submit"  # how the record shows it
        result = await self._env_call("submit", self.env_submit(argument or "", forced=forced))
        step = self.recorder.step(
            result,
            action,
            turn=self.turns_used + (1 if forced and result.kind == "submit" else 0),
            thought=thought or (FORCED_SUBMIT if forced and result.kind == "submit" else None),
            tokens=_tokens(reply),
        )
        if result.kind == "vetoed":
            return TurnResult("vetoed", result.observation, step)
        return TurnResult("submit", result.observation, step, reward=result.reward, done=True)

    def finish(self, reward: float, parts: dict[str, Any]) -> None:
        """Store the score of a submit made through a tool. The parts come from the env's own score of
        the submit, every part included (a tool's artifact carries only what the agent may see);
        ``parts`` stand in only where the env kept none. The outcome follows from them
        (:meth:`Trajectory.settle`)."""
        scored = self.env.submitted
        if scored is not None:
            parts = dict(scored.parts) | ({"corrupt": True} if scored.corrupt else {})
        self.recorder.scored(reward, parts)

    def submission_candidate(self) -> str | None:
        """What a submit without an argument should carry: None (the last output) for Bash/SQL,
        the function name for Python, the last flag-like string seen for CTF."""
        return self.env.submission_candidate(self.actions, self.observations)

    def count_turn(self) -> int:
        """Use one model turn of the budget; returns the turn's number."""
        self.turns_used += 1
        return self.turns_used

    def record(self, step: Step, reply: ModelReply | None = None) -> Step:
        """Append ``step`` to the trajectory, with the tokens of the reply that led to it."""
        step.input_tokens, step.output_tokens = _tokens(reply)
        return self.recorder.add(step)

    # -- internals --------------------------------------------------------------------------------

    async def _env_call(self, what: str, call: Awaitable[T]) -> T:
        try:
            return await call
        except Exception as exc:
            raise EnvFailure(f"env {what} failed: {type(exc).__name__}: {exc}") from exc


def _tokens(reply: ModelReply | None) -> tuple[int, int]:
    return (reply.input_tokens, reply.output_tokens) if reply is not None else (0, 0)

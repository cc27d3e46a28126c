"""The harness's side of an episode played by a user's agent: its tools, its gate and its record.

A user's agent gets our toolkit's tools wrapped in :class:`EpisodeTool`: same names, descriptions and
argument schemas, but every call goes through the episode's :class:`AgentGate`, which

- counts tool calls against the turn budget and refuses them once it is spent, once the episode is
  submitted, and once the runner has stopped the agent (so an agent that keeps calling gets answers
  that run nothing, whatever the agent does with them);
- records each call as a :class:`~intercode_agents.trajectory.Step` (action = the tool call,
  observation = the tool's content, exit code and flags from the tool's artifact; thought and
  tokens from the model message that made the call) and signals the runner to stop the agent
  (``stopped``) when the episode is submitted, the turns are spent or the env failed.

:class:`ModelRecorder` is a LangChain callback handler, given both to the agent's run (so it sees
every chat model the agent calls, in any Runnable that passes its config on) and to the episode's
copy of the model the agent was given (so it sees that model's calls even where the agent drops the
config). It adds each reply's tokens to the trajectory, records replies that called no tool as
``message`` steps, and refuses a model call (raising before it starts) once the episode's token or
cost budget is spent.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from langchain_core.callbacks import AsyncCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import LLMResult
from langchain_core.tools import BaseTool, ToolException
from pydantic import ConfigDict, PrivateAttr, ValidationError
from pydantic.v1 import ValidationError as ValidationErrorV1

from intercode_agents.strategies.budget import BudgetExhausted
from intercode_agents.strategies.episode import EnvFailure, EpisodeRun
from intercode_agents.tools.env_tools import SubmitTool, step_fields
from intercode_agents.tools.messages import async_only, bad_arguments
from intercode_agents.trajectory import Step, StepKind

NOT_RUN = "not run: {why}"
_CALL_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("intercode_tool_call_id", default=None)

# Why the gate stopped the agent.
SUBMITTED = "the episode is submitted"
TURNS_SPENT = "the turn budget is spent"
ENV_FAILED = "the environment failed"
RUNNER_STOPPED = "the runner stopped the agent"


@dataclass
class _Reply:
    """A model reply that made tool calls, until the first of its calls is recorded."""

    message: AIMessage
    input_tokens: int
    output_tokens: int
    claimed: bool = False


def _usage(message: BaseMessage) -> tuple[int, int]:
    usage = getattr(message, "usage_metadata", None) or {}
    return int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)


class AgentStopped(Exception):
    """A model call after the episode ended: the agent is being stopped (it is refused)."""


def describe_call(name: str, args: dict[str, Any] | None) -> str:
    return f"{name}({json.dumps(args or {}, ensure_ascii=False)})"


class AgentGate:
    """Counts, runs, refuses and records the tool calls of one agent episode (see the module docstring)."""

    def __init__(self, run: EpisodeRun) -> None:
        self.run = run
        self.stopped = asyncio.Event()
        self.stop_reason: str | None = None
        self.env_failure: EnvFailure | None = None
        self.budget_spent: BudgetExhausted | None = None
        self.closed = False  # the episode is over: nothing more is recorded
        self.model_calls = 0
        self.model_errors: list[BaseException] = []
        self._replies: dict[str, _Reply] = {}  # by tool call id
        self._unmatched: list[_Reply] = []  # replies none of whose calls was recorded yet

    # -- stopping ---------------------------------------------------------------------------------
    def halt(self, reason: str) -> None:
        if self.stop_reason is None:
            self.stop_reason = reason
        self.stopped.set()

    # -- model replies ------------------------------------------------------------------------------
    def before_model_call(self) -> None:
        """Refuse a model call once the episode is over or its token or cost budget is spent."""
        if self.budget_spent is not None:
            raise BudgetExhausted(self.budget_spent.outcome, str(self.budget_spent))
        if self.stop_reason is not None:
            raise AgentStopped(self.stop_reason)
        try:
            self.run.budget.check(self.run.trajectory)
        except BudgetExhausted as exc:
            self.budget_spent = exc
            self.halt(str(exc))
            raise
        self.model_calls += 1

    def model_replied(self, message: AIMessage) -> None:
        if self.closed:
            return
        tokens_in, tokens_out = _usage(message)
        self.run.trajectory.input_tokens += tokens_in
        self.run.trajectory.output_tokens += tokens_out
        self._flush_unmatched()
        if not message.tool_calls and not message.invalid_tool_calls:
            step = Step(
                turn=self.run.turns_used,
                kind="message",
                action="",
                thought=message.text.strip() or None,
                input_tokens=tokens_in,
                output_tokens=tokens_out,
            )
            self.run.recorder.add(step)  # (its tokens are set: record() would take a reply's)
            return
        reply = _Reply(message, tokens_in, tokens_out)
        for call in message.tool_calls:
            if call.get("id"):
                self._replies[str(call["id"])] = reply
        self._unmatched.append(reply)

    def _claim(self, call_id: str | None) -> _Reply | None:
        """The reply that made the call ``call_id`` (or, without an id, the latest unmatched one)."""
        reply = self._replies.pop(call_id, None) if call_id else None
        if reply is None and self._unmatched:
            reply = self._unmatched[-1]
        if reply is None or reply.claimed:
            return None
        reply.claimed = True
        self._unmatched = [r for r in self._unmatched if r is not reply]
        return reply

    def _flush_unmatched(self) -> None:
        """Record replies whose tool calls never reached our tools (an unknown tool name, say)."""
        for reply in self._unmatched:
            calls = [describe_call(c["name"], c.get("args")) for c in reply.message.tool_calls]
            calls += [
                f"{c.get('name') or '?'} (unreadable arguments)" for c in reply.message.invalid_tool_calls
            ]
            step = Step(
                turn=self.run.turns_used,
                kind="message",
                action="; ".join(calls),
                observation="the tool call(s) did not reach the episode's tools",
                thought=reply.message.text.strip() or None,
                input_tokens=reply.input_tokens,
                output_tokens=reply.output_tokens,
            )
            reply.claimed = True
            self.run.recorder.add(step)  # (its tokens are set: record() would take a reply's)
        self._unmatched = []

    def close(self) -> None:
        """The agent is done, or stopped and given its grace: record what is pending, then refuse
        every later call without recording it (an agent that outlives its episode changes nothing)."""
        self.halt(RUNNER_STOPPED)
        self._flush_unmatched()
        self.closed = True

    # -- tool calls ---------------------------------------------------------------------------------
    def _step(
        self, kind: StepKind, action: str, observation: str, call_id: str | None, **fields: Any
    ) -> Step:
        reply = self._claim(call_id)
        step = Step(turn=self.run.turns_used, kind=kind, action=action, observation=observation, **fields)
        if reply is not None:
            step.thought = reply.message.text.strip() or None
            step.input_tokens, step.output_tokens = reply.input_tokens, reply.output_tokens
        return self.run.recorder.add(step)

    def refuse(self, name: str, args: dict[str, Any] | None, why: str, call_id: str | None) -> str:
        """Record a call that was not run (it uses no turn) and return what the agent reads."""
        text = NOT_RUN.format(why=why)
        if self.closed:
            return text
        self._step("invalid", describe_call(name, args), text, call_id, errored=True)
        return text

    def invalid_arguments(self, name: str, text: str, call_id: str | None) -> str:
        """A call whose arguments do not fit the tool: an invalid step that uses a turn."""
        if self.stop_reason is not None or self.run.turns_left <= 0:
            return self.refuse(name, None, self.stop_reason or TURNS_SPENT, call_id)  # records if open
        self.run.count_turn()
        reply = self._replies.get(call_id or "")
        calls = reply.message.tool_calls if reply is not None else []
        args = next((c.get("args") for c in calls if c.get("id") == call_id), None)
        self._step("invalid", describe_call(name, args), text, call_id, errored=True)
        self._after_turn()
        return text

    async def call(
        self, tool: BaseTool, args: dict[str, Any], call_id: str | None
    ) -> tuple[str, dict[str, Any]]:
        """Run one call of ``tool`` if the budget allows; record it; return (content, artifact)."""
        if self.stop_reason is not None:
            raise ToolException(self.refuse(tool.name, args, self.stop_reason, call_id))
        if self.run.turns_left <= 0:
            self.halt(TURNS_SPENT)
            raise ToolException(self.refuse(tool.name, args, TURNS_SPENT, call_id))
        self.run.count_turn()
        call = {"name": tool.name, "args": args, "id": call_id or "call", "type": "tool_call"}
        message = await tool.ainvoke(call)
        failure = getattr(tool, "last_failure", None)
        if failure is not None:
            self.env_failure = EnvFailure(f"env failed in {tool.name}: {type(failure).__name__}: {failure}")
            self.env_failure.__cause__ = failure
            self.halt(ENV_FAILED)
            raise ToolException(f"the environment failed: {type(failure).__name__}")
        content: str = message.text
        artifact: dict[str, Any] = message.artifact or {}
        if message.status == "error" or not artifact:
            self._step("invalid", describe_call(tool.name, args), content, call_id, errored=True)
            self._after_turn()
            raise ToolException(content)
        if isinstance(tool, SubmitTool):
            self.run.finish(artifact["reward"], artifact["reward_parts"])
            self._step(
                "submit",
                artifact["action"],
                content,
                call_id,
                reward=artifact["reward"],
                duration_s=artifact["duration_s"],
                task_files=artifact.get("task_files"),
            )
            self.halt(SUBMITTED)
            return content, artifact
        self.run.turn_limit_reached = self.run.turn_limit_reached or bool(artifact.get("turn_limit_reached"))
        self.run.actions.append(artifact["action"])
        self.run.observations.append(artifact["output"])
        notes = self.run.budget_notes()
        if notes:  # the model reads what is left of its budgets after the output
            content += "".join(f"\n[{note}]" for note in notes)
        self._step(
            "action",
            artifact["action"],
            content,
            call_id,
            **step_fields(artifact),
        )
        self._after_turn()
        return content, artifact

    def _after_turn(self) -> None:
        if self.run.turns_left <= 0:
            self.halt(TURNS_SPENT)


class EpisodeTool(BaseTool):
    """One of our tools as a user's agent gets it: same schema, every call through the episode's gate.

    It offers the agent no way to the episode: the gate and the tool it wraps (whose env holds the
    task, its gold and its scorer) live only in closures, behind private attributes. An agent runs in
    the harness's process and can always dig (Python hides nothing from code in the same process);
    what matters is that the interface hands it nothing, so an honest agent never holds the answer.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    response_format: str = "content_and_artifact"  # type: ignore[assignment]
    handle_tool_error: bool = True

    _play: Callable[[dict[str, Any], str | None], Awaitable[tuple[str, dict[str, Any]]]] = PrivateAttr()
    _refuse_arguments: Callable[[str, str | None], str] = PrivateAttr()

    @classmethod
    def wrap(cls, inner: BaseTool, gate: AgentGate) -> EpisodeTool:
        async def play(args: dict[str, Any], call_id: str | None) -> tuple[str, dict[str, Any]]:
            return await gate.call(inner, args, call_id)

        def refuse_arguments(text: str, call_id: str | None) -> str:
            return gate.invalid_arguments(inner.name, text, call_id)

        tool = cls(name=inner.name, description=inner.description, args_schema=inner.args_schema)
        tool._play, tool._refuse_arguments = play, refuse_arguments
        tool.handle_validation_error = tool._invalid_arguments
        return tool

    def _invalid_arguments(self, exc: ValidationError | ValidationErrorV1) -> str:
        return self._refuse_arguments(bad_arguments(exc), _CALL_ID.get())

    async def arun(self, tool_input: Any, *args: Any, tool_call_id: str | None = None, **kwargs: Any) -> Any:
        token = _CALL_ID.set(tool_call_id)
        try:
            return await super().arun(tool_input, *args, tool_call_id=tool_call_id, **kwargs)
        finally:
            _CALL_ID.reset(token)

    def _run(self, *args: Any, **kwargs: Any) -> Any:
        raise async_only(self.name)

    async def _arun(self, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        return await self._play(kwargs, _CALL_ID.get())


class ModelRecorder(AsyncCallbackHandler):
    """Sees the agent's chat model calls: budgets before each, tokens and messages after."""

    raise_error = True  # a refused call must fail, not be logged and made anyway
    run_inline = True

    def __init__(self, gate: AgentGate) -> None:
        self.__gate = gate  # private: the agent's model carries this handler, and the gate holds the env
        self._seen: set[UUID] = set()  # runs already counted (the handler is attached twice)
        self.started = time.perf_counter()

    async def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[BaseMessage]], *, run_id: UUID, **kwargs: Any
    ) -> None:
        if run_id in self._seen:
            return
        self._seen.add(run_id)
        self.__gate.before_model_call()

    async def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        if run_id not in self._seen:
            return
        self._seen.discard(run_id)
        generations = response.generations[0] if response.generations else []
        message = getattr(generations[0], "message", None) if generations else None
        if isinstance(message, AIMessage):
            self.__gate.model_replied(message)

    async def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        if run_id in self._seen:
            self._seen.discard(run_id)
            self.__gate.model_errors.append(error)

"""The safeguards for a LangChain agent: one middleware around our tools' calls.

::

    from langchain.agents import create_agent
    from intercode_agents.tools.guard_middleware import GuardMiddleware

    async with make_env("bash") as env:
        question, _ = await env.reset(task_id="bash/mini/2")
        agent = create_agent(model, tools=EnvToolkit(env=env).get_tools(),
                             middleware=[GuardMiddleware(env, critic_model=model)])
        await agent.ainvoke({"messages": [("user", question)]})

It applies the :class:`~intercode_agents.guards.Guard` that the ``guarded`` strategy and the MCP
server use, around the calls of ``run_bash``, ``run_sql`` and ``run_python``: a refused statement is
answered with the refusal (the tool does not run), a flagged command is checkpointed before it runs
and rolled back when the policy says so (the tool's answer then says so). ``submit`` is reviewed by
the critic first (when ``critic_model`` is given) and a veto is answered with its reasons instead of
submitting. It adds a ``rollback`` tool when the env has task files. Each tool answer's artifact
carries ``guard`` (what the guard did); :attr:`GuardMiddleware.guard` keeps every event. A new episode
(a reset of the env) is noticed at its first tool call, or call :meth:`GuardMiddleware.begin`.

Async only, like our tools: use ``agent.ainvoke`` / ``agent.astream``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import asdict, replace
from typing import Any, Literal

from langchain.agents.middleware import AgentMiddleware
from langchain.agents.middleware.types import ToolCallRequest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, ToolException
from langgraph.types import Command
from pydantic import BaseModel, ConfigDict, Field

from intercode_agents.envs.base import Env
from intercode_agents.guards import Guard, GuardPolicy, NothingToRollBack
from intercode_agents.tools.messages import async_only

RUN_TOOLS = {"run_bash": "command", "run_sql": "query", "run_python": "code"}
ToolResult = ToolMessage | Command[Any]


class RollbackArgs(BaseModel):
    to: Literal["last", "start"] = Field(
        default="last",
        description="'last': as before the last command that may have destroyed files; 'start': at the start",
    )


class RollbackTool(BaseTool):
    """Restores the task files to a checkpoint, verified by digest."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str = "rollback"
    description: str = (
        "Restore the task's files as they were before the last command that may have destroyed them "
        "(or, with to='start', as at the start of the task)."
    )
    args_schema: type[BaseModel] = RollbackArgs
    response_format: Literal["content", "content_and_artifact"] = "content_and_artifact"
    handle_tool_error: bool = True
    guard: Guard

    def _run(self, *args: Any, **kwargs: Any) -> Any:
        raise async_only(self.name)

    async def _arun(self, to: str = "last") -> tuple[str, dict[str, Any]]:
        async with self.guard.lock:
            try:
                note = await self.guard.rollback(to)
            except NothingToRollBack as exc:
                raise ToolException(str(exc)) from exc
        state = (
            "verified by digest" if note["verified"] else "NOT verified: the files differ from the checkpoint"
        )
        return f"Rolled back the task files ({state}).", {"guard": {"rollback": note}}


class GuardMiddleware(AgentMiddleware):
    """The guard of ``env``'s episodes around an agent's tool calls (see the module docstring)."""

    def __init__(
        self,
        env: Env | None = None,
        policy: GuardPolicy | None = None,
        *,
        critic_model: BaseChatModel | None = None,
        guard: Guard | None = None,
    ) -> None:
        super().__init__()
        if guard is None:
            if env is None:
                raise TypeError("GuardMiddleware needs the env (or a Guard)")
            guard = Guard(env, policy, critic_model=critic_model)
        self.guard = guard
        self.tools = [RollbackTool(guard=guard)] if guard.can_roll_back else []
        self._episode: tuple[int, int] | None = None  # (id of the task, the env's turns) last seen

    async def begin(self) -> None:
        """Start a new episode's guard (the start checkpoint); done by itself after a reset."""
        await self.guard.begin()
        self._episode = (id(self.guard.env.task), self.guard.env.turns)

    async def _notice_reset(self) -> None:
        env = self.guard.env
        seen = self._episode
        if seen is None or seen[0] != id(env.task) or env.turns < seen[1]:
            await self.begin()

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], ToolResult]
    ) -> ToolResult:
        raise async_only("guarded tool")

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[ToolResult]]
    ) -> ToolResult:
        call = request.tool_call
        name, args = call.get("name"), call.get("args") or {}
        if name not in RUN_TOOLS and name != "submit":
            return await handler(request)
        async with self.guard.lock:
            await self._notice_reset()
            if name == "submit":
                return await self._submit(request, handler, args)
            action = args.get(RUN_TOOLS[name]) if isinstance(args, dict) else None
            if not isinstance(action, str):
                return await handler(request)  # the tool's own validation answers
            prepared = await self.guard.prepare(action)
            if prepared.refusal is not None:
                return ToolMessage(
                    content=f"Refused by the guard: {prepared.refusal}",
                    tool_call_id=call.get("id") or "",
                    name=name,
                    status="error",
                    artifact={"action": action, "guard": asdict(prepared.note())},
                )
            result = await handler(request)
            if not isinstance(result, ToolMessage):
                return result
            artifact = dict(result.artifact or {})
            errored = bool(artifact.get("errored")) or result.status == "error"
            observation = str(artifact.get("output", result.text))
            note = await self.guard.settle(
                prepared, observation=observation, errored=errored, exit_code=artifact.get("exit_code")
            )
            content = result.content
            if note is not None and isinstance(content, str):
                content += (
                    f"\n[guard: {note['reason']}; the task files were rolled back to before this command]"
                )
            artifact["guard"] = asdict(replace(prepared.note(), rollback=note))
            return result.model_copy(update={"content": content, "artifact": artifact})

    async def _submit(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolResult]],
        args: dict[str, Any],
    ) -> ToolResult:
        answer = args.get("answer", "") if isinstance(args, dict) else ""
        verdict = await self.guard.review(self.guard.candidate(str(answer or "")))
        if verdict is None or verdict.accepted:
            return await handler(request)
        call = request.tool_call
        return ToolMessage(
            content=f"Not submitted: a reviewer sent the answer back: {verdict.reasons}",
            tool_call_id=call.get("id") or "",
            name="submit",
            artifact={"vetoed": True, "guard": {"veto": verdict.reasons, "veto_source": verdict.source}},
        )

"""A ``run_bash`` tool bound to a bare :class:`~intercode_agents.sandbox.Sandbox` (no task, no reward).

For agents that only need an isolated shell: the toolkit opens one persistent bash session in the
sandbox on first use (so ``cd`` and variables persist) and runs each command with a deadline. The
caller owns the sandbox (starts and closes it).
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from langchain_core.tools import BaseTool, BaseToolkit, ToolException
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from intercode_agents.sandbox.sandbox import Sandbox
from intercode_agents.sandbox.shell import ShellSession
from intercode_agents.tools.env_tools import BashCommand
from intercode_agents.tools.messages import ArgumentsErrorHandler, async_only, bad_arguments
from intercode_agents.tools.observation import (
    DEFAULT_OBSERVATION_LIMIT,
    MIN_OBSERVATION_LIMIT,
    cap_output,
    model_view,
)


class SandboxShell(BaseModel):
    """One lazily started bash session in a sandbox, shared by the toolkit's tools."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    sandbox: Sandbox
    workdir: str | None = None
    _session: ShellSession | None = PrivateAttr(default=None)
    _lock: asyncio.Lock | None = PrivateAttr(default=None)

    async def session(self) -> ShellSession:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._session is None:
                self._session = await self.sandbox.shell(workdir=self.workdir)
            return self._session


class SandboxBashTool(BaseTool):
    """``run_bash`` in a bare sandbox."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str = "run_bash"
    description: str = "Run bash command(s) in an isolated Linux sandbox and return the output."
    args_schema: type[BaseModel] = BashCommand
    response_format: Literal["content", "content_and_artifact"] = "content_and_artifact"
    handle_tool_error: bool = True
    handle_validation_error: ArgumentsErrorHandler = bad_arguments
    shell: SandboxShell
    timeout: float = Field(default=30.0, gt=0)
    observation_limit: int = Field(default=DEFAULT_OBSERVATION_LIMIT, ge=MIN_OBSERVATION_LIMIT)

    def _run(self, *args: Any, **kwargs: Any) -> Any:
        raise async_only(self.name)

    async def _arun(self, command: str) -> tuple[str, dict[str, Any]]:
        if not command.strip():
            raise ToolException("the command is empty")
        if "\x00" in command:
            raise ToolException("the command contains a NUL byte")
        try:
            session = await self.shell.session()
            result = await session.run(command, timeout=self.timeout)
        except Exception as exc:
            raise ToolException(f"the sandbox failed: {type(exc).__name__}: {exc}") from exc
        view = model_view(
            result.output, self.observation_limit, exit_code=result.exit_code, timed_out=result.timed_out
        )
        artifact = {
            "action": command,
            "output": cap_output(result.output),
            "exit_code": result.exit_code,
            "errored": result.exit_code != 0,
            "timed_out": result.timed_out,
            "output_truncated": result.truncated,
            "observation_truncated": view.truncated,
            "duration_s": result.duration_s,
        }
        return view.text, artifact


class SandboxToolkit(BaseToolkit):
    """``run_bash`` bound to one started sandbox; each toolkit keeps its own shell session."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    sandbox: Sandbox
    workdir: str | None = None
    timeout: float = Field(default=30.0, gt=0)
    observation_limit: int = Field(default=DEFAULT_OBSERVATION_LIMIT, ge=MIN_OBSERVATION_LIMIT)
    _shell: SandboxShell | None = PrivateAttr(default=None)

    def get_tools(self) -> list[BaseTool]:
        if self._shell is None:
            self._shell = SandboxShell(sandbox=self.sandbox, workdir=self.workdir)
        return [
            SandboxBashTool(shell=self._shell, timeout=self.timeout, observation_limit=self.observation_limit)
        ]

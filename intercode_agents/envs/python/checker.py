"""The Python scorer's check process: the runner's answers are read and the checks evaluated there.

One process per scoring (:mod:`intercode_agents.envs.python.checks` says why and what it does),
started as the scoring starts, so its start-up overlaps the sandboxes', and ended with it. Each
answer is owed within ``timeout`` seconds; past it, or when the process dies (its memory is capped),
the process is killed and the next request starts a new one.

Whose fault a failure is: on the agent's side it is the agent's, a failed test whose reason goes into
the reward's parts; on the gold's side (values of the task's own code, from a sandbox no agent
touched) and when the process cannot start at all, it is the harness's (:class:`ScorerFault`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from pathlib import Path
from typing import Any

import intercode_agents
from intercode_agents.envs.python.checks import MAX_TEXT, TestRun
from intercode_agents.envs.python.reward import TestOutcome
from intercode_agents.errors import ScorerFault

_ROOT = str(Path(intercode_agents.__file__).resolve().parent.parent)  # the same copy of the package
_BOOT = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from intercode_agents.envs.python.checks import main; main()"
)
_ANSWER_LIMIT = 1 << 20  # the process's answers are short (texts are clipped to MAX_TEXT characters)
_START_TIMEOUT_S = 60.0


class CheckProcess:
    """The check process of one scoring (an async context manager)."""

    def __init__(self, *, timeout: float) -> None:
        self.timeout = timeout
        self._proc: asyncio.subprocess.Process | None = None
        self._starting: asyncio.Task[asyncio.subprocess.Process] | None = None
        self._lock = asyncio.Lock()

    async def __aenter__(self) -> CheckProcess:
        self._starting = asyncio.create_task(self._start())
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _start(self) -> asyncio.subprocess.Process:
        try:
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-I",
                "-c",
                _BOOT,
                _ROOT,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL,
                limit=_ANSWER_LIMIT,
            )
        except OSError as exc:
            raise ScorerFault(f"the scorer's check process could not start: {exc}") from exc
        try:
            answer = await self._exchange(proc, {"op": "ping"}, [], _START_TIMEOUT_S)
        except BaseException:
            await _kill(proc)
            raise
        if answer != {"ok": True}:
            await _kill(proc)
            raise ScorerFault(f"the scorer's check process did not start: {answer}")
        return proc

    async def _process(self) -> asyncio.subprocess.Process:
        if self._proc is None or self._proc.returncode is not None:
            starting, self._starting = self._starting, None
            self._proc = await (starting if starting is not None else self._start())
        return self._proc

    @staticmethod
    async def _exchange(
        proc: asyncio.subprocess.Process, request: dict[str, Any], blobs: list[str], timeout: float
    ) -> dict[str, Any] | str:
        """Send one request; its answer, or why none came in time."""
        assert proc.stdin is not None and proc.stdout is not None
        data = [blob.encode("utf-8", errors="surrogatepass") for blob in blobs]
        header = json.dumps(request | {"sizes": [len(d) for d in data]}).encode("ascii") + b"\n"
        try:
            async with asyncio.timeout(timeout):
                proc.stdin.write(header + b"".join(data))
                await proc.stdin.drain()
                line = await proc.stdout.readline()
        except TimeoutError:
            return f"took longer than {timeout:g} s"
        except (OSError, ValueError) as exc:  # a broken pipe, an answer past the limit
            return f"the check process failed ({type(exc).__name__}: {exc})"
        if not line:
            code = await proc.wait()
            return f"the check process ended (exit code {code})"
        try:
            answer = json.loads(line)
        except ValueError:
            return "the check process sent an unreadable answer"
        if not isinstance(answer, dict) or "fault" in answer:
            return str(answer.get("fault") if isinstance(answer, dict) else answer)[:MAX_TEXT]
        return answer

    async def _call(self, request: dict[str, Any], blobs: list[str]) -> dict[str, Any] | str:
        async with self._lock:
            proc = await self._process()
            answer = await self._exchange(proc, request, blobs, self.timeout)
            if isinstance(answer, str):
                await _kill(proc)  # its state is unknown: the next request gets a new one
            return answer

    async def read_load(self, reply: str, *, trusted: bool) -> dict[str, Any]:
        """The fields of a runner's answer to ``load`` (``ok``, ``error``, ``setup_error``)."""
        answer = await self._call({"op": "load"}, [reply])
        if isinstance(answer, str):
            if trusted:
                raise ScorerFault(f"the scorer could not read the gold's load answer: {answer}")
            error = f"RuntimeError: the scoring runner's answer could not be read: {answer}"
            return {"ok": False, "error": error, "setup_error": None}
        return answer

    async def gold_outcome(self, test: dict[str, Any], gold: TestRun) -> TestOutcome:
        """One test's outcome for the gold (``test``: its source, entry point and host code)."""
        answer = await self._call(
            test | {"op": "check", "side": "gold", "mine": gold.fields(), "theirs": None},
            [gold.reply or ""],
        )
        if isinstance(answer, str):
            raise ScorerFault(f"the scorer could not check the gold's results: {answer}")
        return _outcome(answer)

    async def agent_outcome(self, test: dict[str, Any], agent: TestRun, gold: TestRun) -> TestOutcome:
        """One test's outcome for the agent; a result the process could not check in time or
        within its memory fails the test, with the reason."""
        answer = await self._call(
            test | {"op": "check", "side": "agent", "mine": agent.fields(), "theirs": gold.fields()},
            [agent.reply or "", gold.reply or ""],
        )
        if isinstance(answer, str):
            if answer.startswith("took longer"):
                reason = f"comparing the result with the expected value {answer}"
                return TestOutcome(passed=False, error=f"TimeoutError: {reason}", refused=reason)
            reason = f"the result could not be compared with the expected value: {answer}"
            return TestOutcome(passed=False, error=f"RuntimeError: {reason}", refused=reason)
        return _outcome(answer)

    async def close(self) -> None:
        starting, self._starting = self._starting, None
        if starting is not None:
            starting.cancel()  # (a start that is under way kills what it started)
            (started,) = await asyncio.gather(starting, return_exceptions=True)
            if isinstance(started, asyncio.subprocess.Process):
                await _kill(started)
        proc, self._proc = self._proc, None
        if proc is not None:
            await _kill(proc)


def _outcome(answer: dict[str, Any]) -> TestOutcome:
    return TestOutcome(
        passed=answer.get("passed") is True,
        error=answer.get("error"),
        timed_out=answer.get("timed_out") is True,
        refused=answer.get("refused"),
    )


async def _kill(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
    await proc.wait()

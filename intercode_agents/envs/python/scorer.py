"""Score a task's assert statements out of the agent's reach.

The agent's REPL never runs a test. At scoring time a fresh sandbox, in which no agent action ever
ran, starts the scoring runner (``docker/python/pyscore.py``), which rebuilds a :class:`Program`
from source: the agent's cells reduced to their definitions, or the gold solution as it is, then the
task's ``test_setup_code``. Each test is cut into probes and a check
(:mod:`~intercode_agents.envs.python.asserts`); the runner evaluates only the probes (the agent's
function on the test's arguments) and sends back plain, type-tagged values. The check (the
comparison with the expected value, which never enters the sandbox) is evaluated out of the
sandbox, but not on the harness's event loop either: the runner's answers are handed unread to the
scoring's check process (:mod:`~intercode_agents.envs.python.checker`), which decodes them strictly
and within bounds (:mod:`~intercode_agents.envs.python.values`), evaluates the check under a
deadline and a memory cap, and answers with the outcome. A value the scorer refuses (malformed, too
large, too slow to compare) fails its test, and the reward's parts say why (``refused_result``).

Every test runs under ``test_timeout``: the runner interrupts a call at its deadline, and if the
runner does not answer within the deadline plus a grace period (the code under test ignored the
alarm, or killed its own process), it is restarted and the program loaded again before the next
test. Whatever the code under test does to its sandbox after the runner started is its own
failure, never an env error.

:class:`AssertScorer` is the reusable unit: the Python env gives it sandboxes, the agent's cells and
the gold's code; a dataset with another test format only needs to turn its tests into asserts.

An honest function gets the outcome Python's own ``assert`` gives it, error text included (the
MBPP gold replay and the re-score of the paper's gpt-3.5 log give the same reward as the tests run
in the REPL, action for action). What can differ from running the tests in the agent's REPL:

- Top-level expression statements, asserts and loops of the agent's cells are not rebuilt, so a
  function that depends on their side effects (``sys.setrecursionlimit(...)``, a table a loop
  filled) behaves otherwise; a statement that fails when rebuilt is skipped.
- Built-ins the check uses are the interpreter's own: a global of the agent's named ``int`` no longer
  changes ``int(f(x))`` (the entry point itself may be named like a built-in, as MBPP 126's ``sum``).
- The expected side of MBPP 596 (``sys.getsizeof``) is the gold's: the agent's cells need no
  top-level ``import sys`` for it, where a missing one used to fail the test with a NameError.
- A result that is not plain data (an instance of the agent's own class, a generator) equals
  nothing, where its own ``__eq__`` used to decide; a subclass of a plain type compares by the plain
  value it holds (a ``Counter``, ``OrderedDict`` or namedtuple compared with a literal as before).
- A call that ignores its deadline is cut when the runner does not answer within ``test_timeout``
  plus 5 s; only that test fails, where every test of the run used to.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from intercode_agents.envs.python.asserts import (
    HOST_BUILTINS,
    ProbeResult,
    Side,
    SplitTest,
    host_helpers,
    split_test,
)
from intercode_agents.envs.python.checker import CheckProcess
from intercode_agents.envs.python.checks import TestRun
from intercode_agents.envs.python.reward import TestOutcome
from intercode_agents.sandbox import JsonSession, Sandbox

__all__ = ["AssertScorer", "Cell", "Program", "TestRun"]

RUNNER = ["python3", "/opt/intercode/pyscore.py"]
_GRACE_S = 5.0  # beyond the session's own grace, for a runner that keeps writing lines for other requests


@dataclass(frozen=True)
class Cell:
    """One piece of code the agent ran, and the line of the top-level statement that raised (None:
    it ran to its end)."""

    code: str
    stop_line: int | None = None


@dataclass(frozen=True)
class Program:
    """What a scoring runner rebuilds: the cells (``whole``: each as it is, else only its
    definitions), then ``setup``."""

    cells: tuple[Cell, ...]
    setup: str = ""
    whole: bool = False


class RunnerSession:
    """One scoring runner in one sandbox: loads ``program``, then evaluates probes test by test.
    ``trusted``: the program is the gold's (a failure to read its answers is the harness's)."""

    def __init__(
        self,
        sandbox: Sandbox,
        program: Program,
        checker: CheckProcess,
        *,
        trusted: bool,
        test_timeout: float,
        load_timeout: float,
    ) -> None:
        self.sandbox = sandbox
        self.program = program
        self.checker = checker
        self.trusted = trusted
        self.test_timeout = test_timeout
        self.load_timeout = load_timeout
        self.session: JsonSession | None = None
        self.loaded_by = 0  # the runner process (its start count) that loaded the program; 0: none
        self.setup_error: str | None = None

    async def start(self) -> None:
        """Start the runner (before any code under test runs: a failure here is the harness's)."""
        self.session = await self.sandbox.json_session(RUNNER, ready_timeout=60, raw=True)

    async def close(self) -> None:
        if self.session is not None:
            await self.sandbox.forget(self.session)
            self.session = None

    async def _request(self, payload: dict[str, Any], timeout: float) -> dict[str, Any]:
        """One request, answered within ``timeout`` plus the grace periods whatever the runner's
        process writes: ``{"raw": line}`` (its answer, unread), or a failure. Everything the runner
        sends is the code under test's to shape (a flood of lines for other requests), so any
        failure here is the submission's: the runner is ended, and the next request starts a new one."""
        session = self.session
        assert session is not None
        try:
            async with asyncio.timeout(timeout + session.grace + _GRACE_S):
                return await session.request(payload, timeout=timeout)
        except Exception as exc:  # any: see the docstring
            with contextlib.suppress(Exception):
                await session.close()
            error = "no answer in time" if isinstance(exc, TimeoutError) else f"{type(exc).__name__}: {exc}"
            return {
                "ok": False,
                "restarted": True,
                "timed_out": isinstance(exc, TimeoutError),
                "error": f"RuntimeError: the scoring runner failed ({error})",
            }

    async def _load(self) -> None:
        program = self.program
        payload = {
            "op": "load",
            "cells": [{"code": c.code, "stop_line": c.stop_line} for c in program.cells],
            "whole": program.whole,
            "setup": program.setup,
            "timeout": self.load_timeout,
            "setup_timeout": self.test_timeout,
        }
        budget = self.load_timeout + self.test_timeout
        reply = await self._request(payload, budget)
        assert self.session is not None
        # Loaded, or failed for good: a load that timed out is not tried again.
        self.loaded_by = self.session.starts
        if "raw" in reply:
            reply = await self.checker.read_load(reply["raw"], trusted=self.trusted)
        elif reply.get("timed_out"):  # no answer in time, or the runner died while loading
            reply = {"ok": False, "error": f"TimeoutError: timed out after {budget:g} s"}
        if not reply.get("ok"):
            self.setup_error = str(reply.get("error") or "the scoring runner could not load the program")
        else:
            error = reply.get("setup_error")
            self.setup_error = error if isinstance(error, str) else None

    async def run_test(self, exprs: Sequence[str]) -> TestRun:
        """Evaluate one test's probes (in order, under one deadline)."""
        count = len(exprs)
        for attempt in range(2):
            if not self.loaded_by:
                await self._load()
            if self.setup_error is not None:
                return TestRun(count, setup_error=self.setup_error)
            if not exprs:
                return TestRun(0)
            payload = {"op": "probe", "exprs": list(exprs), "timeout": self.test_timeout}
            reply = await self._request(payload, self.test_timeout)
            if reply.get("restarted"):
                self.loaded_by = 0
                if reply.get("timed_out"):
                    timeout = f"TimeoutError: timed out after {self.test_timeout:g} s"
                    return TestRun(count, failure=ProbeResult(error=timeout, timed_out=True))
                return TestRun(count, failure=ProbeResult(error=str(reply.get("error"))))
            assert self.session is not None
            if self.session.starts != self.loaded_by and attempt == 0:
                self.loaded_by = 0  # the runner was replaced since the load: load again
                continue
            return TestRun(count, reply=str(reply["raw"]))
        raise AssertionError("unreachable")


class AssertScorer:
    """Scores one task's assert statements: runs a program's probes in a sandbox, and has the
    scoring's check process evaluate the checks. Construction raises :class:`UnsplittableTest` for
    a test it cannot score safely."""

    def __init__(
        self,
        tests: Sequence[str],
        entry_point: str,
        *,
        host_code: str = "",
        test_timeout: float = 10.0,
        load_timeout: float = 60.0,
        check_timeout: float = 10.0,
    ) -> None:
        self.tests = list(tests)
        self.entry_point = entry_point
        self.host_code = host_code
        # The task's own helpers are defined here only for their names (the check process defines
        # them again, to apply them to the agent's values).
        names = HOST_BUILTINS | frozenset(host_helpers(host_code))
        self.splits: list[SplitTest] = [split_test(test, entry_point, names) for test in self.tests]
        self.test_timeout = test_timeout
        self.load_timeout = load_timeout
        self.check_timeout = check_timeout

    def checker(self) -> CheckProcess:
        """The check process of one scoring (``async with scorer.checker() as checker:``)."""
        return CheckProcess(timeout=self.check_timeout)

    async def run(
        self, sandbox: Sandbox, program: Program, checker: CheckProcess, side: Side | None = None
    ) -> list[TestRun]:
        """Each test's probe results for ``program`` (only the probes of ``side``, or all of them:
        the gold's, whose answers the harness trusts)."""
        session = RunnerSession(
            sandbox,
            program,
            checker,
            trusted=side is None,
            test_timeout=self.test_timeout,
            load_timeout=self.load_timeout,
        )
        await session.start()
        try:
            return [await session.run_test(split.probe_sources(side)) for split in self.splits]
        finally:
            await session.close()

    async def outcomes(
        self, agent: Sequence[TestRun], gold: Sequence[TestRun], checker: CheckProcess
    ) -> tuple[list[TestOutcome], list[TestOutcome]]:
        """Each test's outcome for the agent (its probes, the expected side from the gold run) and
        for the gold (all its own probes)."""
        agent_outcomes, gold_outcomes = [], []
        for test, mine, theirs in zip(self.tests, agent, gold, strict=True):
            fields = {"test": test, "entry_point": self.entry_point, "host_code": self.host_code}
            gold_outcomes.append(await checker.gold_outcome(fields, theirs))
            agent_outcomes.append(await checker.agent_outcome(fields, mine, theirs))
        return agent_outcomes, gold_outcomes

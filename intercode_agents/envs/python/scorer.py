"""Score a task's assert statements out of the agent's reach.

The agent's REPL never runs a test. At scoring time a fresh sandbox, in which no agent action ever
ran, starts the scoring runner (``docker/python/pyscore.py``), which rebuilds a :class:`Program`
from source: the agent's cells reduced to their definitions, or the gold solution as it is, then the
task's ``test_setup_code``. Each test is cut into probes and a check
(:mod:`~intercode_agents.envs.python.asserts`); the runner evaluates only the probes (the agent's
function on the test's arguments) and sends back plain, type-tagged values, which are decoded
strictly (:mod:`~intercode_agents.envs.python.values`). The check (the comparison with the
expected value, which never enters the sandbox) is evaluated here.

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
    evaluate,
    host_helpers,
    split_test,
)
from intercode_agents.envs.python.reward import TestOutcome
from intercode_agents.envs.python.values import MalformedValue, decode
from intercode_agents.sandbox import JsonSession, Sandbox

RUNNER = ["python3", "/opt/intercode/pyscore.py"]
_NOT_RUN = "RuntimeError: the scoring runner sent no result for this call"
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


@dataclass(frozen=True)
class TestRun:
    """The probe results of one test in one program (or the setup error that stopped them all)."""

    __test__ = False  # not a pytest test class

    results: tuple[ProbeResult, ...]
    setup_error: str | None = None


def _result(item: Any) -> ProbeResult:
    if not isinstance(item, dict):
        return ProbeResult(error="MalformedValue: a result must be an object")
    if "value" in item:
        try:
            return ProbeResult(value=decode(item["value"]))
        except (MalformedValue, RecursionError) as exc:
            return ProbeResult(error=f"MalformedValue: {exc}")
    error = item.get("error")
    if not isinstance(error, str):
        return ProbeResult(error="MalformedValue: a result needs a value or an error")
    return ProbeResult(error=error, timed_out=item.get("timed_out") is True)


class RunnerSession:
    """One scoring runner in one sandbox: loads ``program``, then evaluates probes test by test."""

    def __init__(
        self, sandbox: Sandbox, program: Program, *, test_timeout: float, load_timeout: float
    ) -> None:
        self.sandbox = sandbox
        self.program = program
        self.test_timeout = test_timeout
        self.load_timeout = load_timeout
        self.session: JsonSession | None = None
        self.loaded = False
        self.setup_error: str | None = None

    async def start(self) -> None:
        """Start the runner (before any code under test runs: a failure here is the harness's)."""
        self.session = await self.sandbox.json_session(RUNNER, ready_timeout=60)

    async def close(self) -> None:
        if self.session is not None:
            await self.sandbox.forget(self.session)
            self.session = None

    async def _request(self, payload: dict[str, Any], timeout: float) -> dict[str, Any]:
        """One request, answered within ``timeout`` plus the grace periods whatever the runner's
        process writes. Everything it sends is the code under test's to shape (a flood of lines for
        other requests, a line that is JSON but no object), so any failure here is the submission's:
        the runner is ended, and the next request starts a new one."""
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
        self.loaded = True  # loaded, or failed for good: a load that timed out is not tried again
        if reply.get("restarted"):  # no answer in time, or the runner died while loading
            timed_out = f"TimeoutError: timed out after {budget:g} s"
            self.setup_error = timed_out if reply.get("timed_out") else str(reply.get("error"))
        elif not reply.get("ok"):
            self.setup_error = str(reply.get("error") or "the scoring runner could not load the program")
        else:
            error = reply.get("setup_error")
            self.setup_error = error if isinstance(error, str) else None

    async def run_test(self, exprs: Sequence[str]) -> TestRun:
        """Evaluate one test's probes (in order, under one deadline)."""
        for attempt in range(2):
            if not self.loaded:
                await self._load()
            if self.setup_error is not None:
                return TestRun((), self.setup_error)
            if not exprs:
                return TestRun(())
            payload = {"op": "probe", "exprs": list(exprs), "timeout": self.test_timeout}
            reply = await self._request(payload, self.test_timeout)
            if reply.get("restarted"):
                self.loaded = False
                if reply.get("timed_out"):
                    timeout = f"TimeoutError: timed out after {self.test_timeout:g} s"
                    return TestRun((ProbeResult(error=timeout, timed_out=True),) * len(exprs))
                return TestRun((ProbeResult(error=str(reply.get("error"))),) * len(exprs))
            if reply.get("loaded") is False and attempt == 0:
                self.loaded = False  # the runner was replaced since the load: load again
                continue
            return TestRun(self._results(reply, len(exprs)))
        raise AssertionError("unreachable")

    @staticmethod
    def _results(reply: dict[str, Any], count: int) -> tuple[ProbeResult, ...]:
        items = reply.get("results") if reply.get("ok") else None
        if not isinstance(items, list):
            error = str(reply.get("error") or "the scoring runner sent no results")
            return (ProbeResult(error=error),) * count
        results = [_result(item) for item in items[:count]]
        while len(results) < count:  # after a timeout the rest never ran: they timed out too
            last = results[-1] if results else None
            results.append(last if last is not None and last.timed_out else ProbeResult(error=_NOT_RUN))
        return tuple(results)


class AssertScorer:
    """Scores one task's assert statements: runs a program's probes in a sandbox and evaluates the
    checks here. Construction raises :class:`UnsplittableTest` for a test it cannot score safely."""

    def __init__(
        self,
        tests: Sequence[str],
        entry_point: str,
        *,
        host_code: str = "",
        test_timeout: float = 10.0,
        load_timeout: float = 60.0,
    ) -> None:
        self.tests = list(tests)
        self.helpers = host_helpers(host_code)
        names = HOST_BUILTINS | frozenset(self.helpers)
        self.splits: list[SplitTest] = [split_test(test, entry_point, names) for test in self.tests]
        self.test_timeout = test_timeout
        self.load_timeout = load_timeout

    async def run(self, sandbox: Sandbox, program: Program, side: Side | None = None) -> list[TestRun]:
        """Each test's probe results for ``program`` (only the probes of ``side``, or all of them)."""
        session = RunnerSession(
            sandbox, program, test_timeout=self.test_timeout, load_timeout=self.load_timeout
        )
        await session.start()
        try:
            return [await session.run_test(split.probe_sources(side)) for split in self.splits]
        finally:
            await session.close()

    def outcomes(
        self, agent: Sequence[TestRun], gold: Sequence[TestRun]
    ) -> tuple[list[TestOutcome], list[TestOutcome]]:
        """Each test's outcome for the agent (its probes, the expected side from the gold run) and
        for the gold (all its own probes)."""
        agent_outcomes, gold_outcomes = [], []
        for split, mine, theirs in zip(self.splits, agent, gold, strict=True):
            gold_outcomes.append(_outcome(split, theirs, list(theirs.results), self.helpers))
            if mine.setup_error is not None:
                agent_outcomes.append(_outcome(split, mine, [], self.helpers))
                continue
            own = iter(mine.results)
            merged = [
                next(own) if probe.side == "agent" else _expected(theirs, i)
                for i, probe in enumerate(split.probes)
            ]
            agent_outcomes.append(_outcome(split, mine, merged, self.helpers))
        return agent_outcomes, gold_outcomes


def _expected(gold: TestRun, index: int) -> ProbeResult:
    if gold.setup_error is not None:
        return ProbeResult(
            error=f"the expected value could not be computed: setup failed: {gold.setup_error}"
        )
    return gold.results[index]


def _outcome(
    split: SplitTest, run: TestRun, results: list[ProbeResult], helpers: dict[str, Any]
) -> TestOutcome:
    if run.setup_error is not None:
        return TestOutcome(passed=False, error=f"setup failed: {run.setup_error}")
    return evaluate(split, results, HOST_BUILTINS | frozenset(helpers), helpers)

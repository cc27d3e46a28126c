"""Read a scoring runner's answers and evaluate a test's check: the part of scoring done off the host.

Everything a scoring runner sends is the code under test's to shape, and so is everything the check
makes of it (a task's own helpers, such as HumanEval 32's ``poly``, are applied to the agent's
values). Reading that on the harness's event loop let one answer hold it: a JSON line of 16 MiB
takes most of a second to parse, a set of integers that collide in Python's hash takes seconds to
build (its time grows with the square of its size), and a check such as ``tuple(f(x))`` on a range
of millions makes hundreds of megabytes. So the scorer hands each answer, unread, to a process of its
own (:class:`~intercode_agents.envs.python.checker.CheckProcess` starts this module as ``python -I``):
it parses, decodes within the bounds of :mod:`.python_values`, evaluates the check
(:mod:`.python_asserts`) and answers with a small outcome. Its memory is capped (``MEMORY_LIMIT``),
and the scorer kills it when an answer takes longer than the check's deadline. Every exception in
here is an outcome with its reason, never a fault of the harness.

The protocol, on the process's stdin and stdout: a request is one JSON line (its ``op`` and
fields, and ``sizes``: the byte lengths of the blobs that follow it, raw UTF-8), the answer is one
JSON line.

- ``{"op": "load", "sizes": [n]}`` + the runner's answer to its ``load`` request ->
  ``{"ok", "error", "setup_error"}``, the only fields of it the scorer uses;
- ``{"op": "check", "test", "entry_point", "host_code", "side", "mine", "theirs", "sizes": [n, m]}`` +
  the runner's answers to the test's ``probe`` requests (``mine``, and for the agent's side the
  gold's, ``theirs``) -> the test's outcome ``{"passed", "error", "timed_out", "refused"}``.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import resource
import sys
from dataclasses import dataclass
from typing import Any, BinaryIO

from intercode_agents.envs.python.asserts import (
    HOST_BUILTINS,
    ProbeResult,
    SplitTest,
    evaluate,
    host_helpers,
    split_test,
)
from intercode_agents.envs.python.reward import TestOutcome
from intercode_agents.envs.python.values import decode

MEMORY_LIMIT = 1 << 30  # bytes of address space: a decoded value within bounds needs well under 100 MB
CPU_LIMIT_S = 600  # a backstop; the scorer's deadline per answer ends a slow one long before
MAX_TEXT = 10_000  # characters of an error text kept (both sides alike, so outcomes still compare)
_NOT_RUN = "RuntimeError: the scoring runner sent no result for this call"


@dataclass(frozen=True)
class TestRun:
    """One test's run in one program, as the host knows it without reading the runner's answer:
    the answer itself (``reply``, read here), or a failure the host saw (``failure``: every probe
    failed so, as when the runner timed out), or the setup error that stopped every test."""

    __test__ = False  # not a pytest test class

    count: int  # the probes the runner was asked to evaluate
    reply: str | None = None
    failure: ProbeResult | None = None
    setup_error: str | None = None

    def fields(self) -> dict[str, Any]:
        """The JSON form of everything but ``reply`` (which travels as a blob)."""
        failure = self.failure
        return {
            "count": self.count,
            "setup_error": self.setup_error,
            "failure": None if failure is None else {"error": failure.error, "timed_out": failure.timed_out},
        }

    @classmethod
    def from_fields(cls, fields: Any, reply: str | None) -> TestRun:
        failure = fields.get("failure")
        return cls(
            count=int(fields["count"]),
            reply=reply,
            failure=None
            if failure is None
            else ProbeResult(error=failure["error"], timed_out=failure["timed_out"]),
            setup_error=fields.get("setup_error"),
        )


def _clip(text: str | None) -> str | None:
    return None if text is None else text[:MAX_TEXT]


def _refused(reason: str) -> ProbeResult:
    return ProbeResult(error=reason, refused=True)


def _result(item: Any) -> ProbeResult:
    if not isinstance(item, dict):
        return _refused("MalformedValue: a result must be an object")
    if "value" in item:
        try:
            return ProbeResult(value=decode(item["value"]))
        except Exception as exc:  # any: a value the code under test made is never the harness's fault
            return _refused(f"{type(exc).__name__}: {exc}")
    error = item.get("error")
    if not isinstance(error, str):
        return _refused("MalformedValue: a result needs a value or an error")
    return ProbeResult(error=error, timed_out=item.get("timed_out") is True)


def _answer(text: str) -> dict[str, Any] | str:
    """The runner's answer as a JSON object, or why it is none."""
    try:
        answer = json.loads(text)
    except (ValueError, RecursionError) as exc:
        return f"MalformedValue: the scoring runner's answer is not JSON ({type(exc).__name__})"
    if not isinstance(answer, dict):
        return "MalformedValue: the scoring runner's answer is not an object"
    return answer


def probe_results(run: TestRun) -> list[ProbeResult]:
    """Each probe's result in ``run`` (its setup error aside)."""
    if run.failure is not None or run.reply is None:
        failure = run.failure or ProbeResult(error=_NOT_RUN)
        return [failure] * run.count
    answer = _answer(run.reply)
    if isinstance(answer, str):
        return [_refused(answer)] * run.count
    items = answer.get("results") if answer.get("ok") is True else None
    if not isinstance(items, list):
        error = answer.get("error")
        reason = error if isinstance(error, str) else "the scoring runner sent no results"
        return [ProbeResult(error=reason)] * run.count
    results = [_result(item) for item in items[: run.count]]
    while len(results) < run.count:  # after a timeout the rest never ran: they timed out too
        last = results[-1] if results else None
        results.append(last if last is not None and last.timed_out else ProbeResult(error=_NOT_RUN))
    return results


def read_load(text: str) -> dict[str, Any]:
    """The fields of a runner's answer to ``load`` the scorer uses, each of the documented type."""
    answer = _answer(text)
    if isinstance(answer, str):
        return {"ok": False, "error": answer, "setup_error": None}
    error, setup_error = answer.get("error"), answer.get("setup_error")
    return {
        "ok": answer.get("ok") is True,
        "error": _clip(error if isinstance(error, str) else None),
        "setup_error": _clip(setup_error if isinstance(setup_error, str) else None),
    }


def _finished(
    split: SplitTest, run: TestRun, results: list[ProbeResult], helpers: dict[str, Any]
) -> TestOutcome:
    if run.setup_error is not None:
        return TestOutcome(passed=False, error=_clip(f"setup failed: {run.setup_error}"))
    outcome = evaluate(split, results, HOST_BUILTINS | frozenset(helpers), helpers)
    return TestOutcome(outcome.passed, _clip(outcome.error), outcome.timed_out, _clip(outcome.refused))


def gold_outcome(split: SplitTest, gold: TestRun, helpers: dict[str, Any]) -> TestOutcome:
    """The test's outcome for the gold: every probe is its own."""
    return _finished(split, gold, probe_results(gold), helpers)


def agent_outcome(split: SplitTest, agent: TestRun, gold: TestRun, helpers: dict[str, Any]) -> TestOutcome:
    """The test's outcome for the agent: its own probes, and the expected side from the gold's run."""
    if agent.setup_error is not None:
        return _finished(split, agent, [], helpers)
    own = iter(probe_results(agent))
    theirs = probe_results(gold) if gold.setup_error is None else []
    merged = []
    for index, probe in enumerate(split.probes):
        if probe.side == "agent":
            merged.append(next(own))
        elif gold.setup_error is not None:
            error = f"the expected value could not be computed: setup failed: {gold.setup_error}"
            merged.append(ProbeResult(error=error))
        else:  # the gold's value: whatever went wrong with it is no refusal of the agent's
            merged.append(dataclasses.replace(theirs[index], refused=False))
    return _finished(split, agent, merged, helpers)


@functools.lru_cache(maxsize=64)
def _helpers(code: str) -> dict[str, Any]:
    return host_helpers(code)


@functools.lru_cache(maxsize=1024)
def _split(test: str, entry_point: str, code: str) -> SplitTest:
    return split_test(test, entry_point, HOST_BUILTINS | frozenset(_helpers(code)))


def check(request: dict[str, Any], blobs: list[str]) -> TestOutcome:
    """Answer one ``check`` request (see the module docstring)."""
    code = str(request.get("host_code") or "")
    split = _split(str(request["test"]), str(request["entry_point"]), code)
    mine = TestRun.from_fields(request["mine"], blobs[0] or None)
    if request["side"] == "gold":
        return gold_outcome(split, mine, _helpers(code))
    theirs = TestRun.from_fields(request["theirs"], blobs[1] or None)
    return agent_outcome(split, mine, theirs, _helpers(code))


def _serve_one(request: dict[str, Any], blobs: list[str]) -> dict[str, Any]:
    op = request.get("op")
    if op == "load":
        return read_load(blobs[0])
    if op == "check":
        outcome = check(request, blobs)
        return {
            "passed": outcome.passed,
            "error": outcome.error,
            "timed_out": outcome.timed_out,
            "refused": outcome.refused,
        }
    if op == "ping":
        return {"ok": True}
    raise ValueError(f"unknown op {op!r}")


def _read_request(stdin: BinaryIO) -> tuple[dict[str, Any], list[str]] | None:
    line = stdin.readline()
    if not line:
        return None
    request = json.loads(line)
    blobs = [stdin.read(size).decode("utf-8", errors="replace") for size in request.get("sizes", [])]
    return request, blobs


def serve(stdin: BinaryIO, stdout: BinaryIO) -> None:
    """Answer requests until stdin ends."""
    while (read := _read_request(stdin)) is not None:
        request, blobs = read
        try:
            answer = _serve_one(request, blobs)
        except MemoryError:
            answer = {"fault": "MemoryError: the check process ran out of memory"}
        except BaseException as exc:  # any: an answer is owed whatever happened
            answer = {"fault": f"{type(exc).__name__}: {exc}"[:MAX_TEXT]}
        stdout.write(json.dumps(answer).encode("ascii") + b"\n")
        stdout.flush()


def main() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_LIMIT_S, CPU_LIMIT_S))
    sys.setrecursionlimit(5_000)
    serve(sys.stdin.buffer, sys.stdout.buffer)


if __name__ == "__main__":
    main()

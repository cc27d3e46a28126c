"""The scorer's check process: deadlines, restarts, and whose fault a failure is."""

from __future__ import annotations

import json

import pytest

from intercode_agents.envs.python.checker import CheckProcess
from intercode_agents.envs.python.checks import TestRun
from intercode_agents.envs.python.reward import TestOutcome
from intercode_agents.errors import ScorerFault

TEST = {"test": "assert f(1) == {2}", "entry_point": "f", "host_code": ""}


def _answer(value: list) -> TestRun:
    return TestRun(1, reply=json.dumps({"ok": True, "results": [{"value": value}], "id": 1}))


GOLD = _answer(["set", [["int", "2"]]])
COLLIDING = _answer(["set", [["int", format(i * (2**61 - 1), "x")] for i in range(1, 40_000)]])


async def test_a_slow_comparison_fails_the_agent_and_the_next_test_gets_a_new_process() -> None:
    async with CheckProcess(timeout=1.0) as checker:
        outcome = await checker.agent_outcome(TEST, COLLIDING, GOLD)
        assert not outcome.passed and outcome.error is not None
        assert outcome.error.startswith("TimeoutError") and "took longer than 1 s" in str(outcome.refused)
        assert await checker.agent_outcome(TEST, GOLD, GOLD) == TestOutcome(True)
        assert await checker.gold_outcome(TEST, GOLD) == TestOutcome(True)


async def test_the_gold_failing_to_check_is_the_harness_fault() -> None:
    async with CheckProcess(timeout=1.0) as checker:
        with pytest.raises(ScorerFault, match="took longer than"):
            await checker.gold_outcome(TEST, COLLIDING)


async def test_the_load_answer_is_read_by_type() -> None:
    async with CheckProcess(timeout=5.0) as checker:
        honest = await checker.read_load('{"ok": true, "setup_error": null, "id": 1}', trusted=False)
        assert honest == {"ok": True, "error": None, "setup_error": None}
        odd = await checker.read_load(
            '{"ok": 1, "setup_error": [1], "error": {"a": 1}, "id": 1}', trusted=False
        )
        assert odd == {"ok": False, "error": None, "setup_error": None}
        junk = await checker.read_load("[" * 200_000, trusted=False)
        assert junk["ok"] is False and "not JSON" in junk["error"]

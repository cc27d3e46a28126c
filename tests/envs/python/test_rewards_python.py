"""The MBPP reward in both modes: shares of tests, by hand."""

from __future__ import annotations

import pytest

from intercode_agents.envs.python.reward import TestOutcome, python_reward
from intercode_agents.errors import ConfigError

TESTS = ["assert f(1) == 2", "assert f(2) == 3", "assert f(3) == 5"]
PASS = TestOutcome(passed=True)
ASSERT = TestOutcome(passed=False, error="AssertionError")


def test_all_tests_pass() -> None:
    for mode in ("intercode", "strict"):
        assert python_reward(TESTS, [PASS] * 3, [PASS] * 3, mode).reward == 1.0


def test_off_by_one_function() -> None:
    # f(x) = x instead of x + 1: every assert fails where the gold passes
    for mode in ("intercode", "strict"):
        result = python_reward(TESTS, [ASSERT] * 3, [PASS] * 3, mode)
        assert (result.reward, result.parts["passed"]) == (0.0, 0)
    strict = python_reward(TESTS, [ASSERT] * 3, [PASS] * 3, "strict")
    assert strict.parts["first_failing_test"] == 0  # a position, not the test


def test_gold_failing_a_test() -> None:
    gold = [PASS, PASS, ASSERT]  # the third test is wrong: the gold fails it too
    agent = [PASS, ASSERT, ASSERT]
    old = python_reward(TESTS, agent, gold, "intercode")
    assert old.reward == pytest.approx(2 / 3)  # tests 1 and 3 match the gold's outcome (3 both fail)
    new = python_reward(TESTS, agent, gold, "strict")
    assert (new.reward, new.parts["tests"], new.parts["dropped_gold_failures"]) == (0.5, 2, 1)  # 1 of 2 kept


def test_error_text_must_match_in_intercode_mode() -> None:
    gold = [ASSERT, PASS, PASS]
    agent = [TestOutcome(False, "NameError: name 'f' is not defined"), PASS, PASS]
    assert python_reward(TESTS, agent, gold, "intercode").reward == pytest.approx(2 / 3)


def test_timeouts_fail_in_strict_mode() -> None:
    agent = [PASS, TestOutcome(False, "timed out after 5s", timed_out=True), PASS]
    result = python_reward(TESTS, agent, [PASS] * 3, "strict")
    assert (result.reward, result.parts["timeouts"]) == (pytest.approx(2 / 3), 1)


def test_gold_failing_everything_is_corrupt() -> None:
    result = python_reward(TESTS, [ASSERT] * 3, [ASSERT] * 3, "strict")
    assert (result.reward, result.corrupt) == (0.0, True)
    assert (
        python_reward(TESTS, [ASSERT] * 3, [ASSERT] * 3, "intercode").reward == 1.0
    )  # the original's free win


def test_outcome_counts_must_match_tests() -> None:
    with pytest.raises(ConfigError, match="3 tests, 2 agent outcomes, 3 gold outcomes"):
        python_reward(TESTS, [PASS] * 2, [PASS] * 3)

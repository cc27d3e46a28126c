"""The Python (MBPP) reward: the tests' outcomes for the agent's function against the gold's.

What the env supplies: the task's test statements (``task.meta["tests"]``) and, for each test, a
:class:`TestOutcome` for the agent's code and one for the gold code, each run after the task's
``test_setup_code`` in fresh globals, every test under its own timeout. The error text is the last
line of the traceback the assert would give (``AssertionError``, ``NameError: name 'f' is not
defined``, ``TimeoutError: timed out after 10 s``); see ``envs/python/scorer.py`` for how the env
runs the tests out of the agent's reach.

- ``intercode`` (the original): the share of tests whose outcome equals the gold's, pass or fail,
  error text included. A test the gold fails counts as solved when the agent fails it the same way.
- ``strict``: tests the gold itself fails are dropped; the reward is the share of the remaining tests
  the agent passes (a timeout is a failure). When the gold fails every test the task is corrupt.

In both modes a result the scorer refused (malformed, past a bound, too slow to compare) fails its
test, and ``refused_result`` in the parts names the first such test and why (never an expected value).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from intercode_agents.errors import ConfigError
from intercode_agents.reward import PartValue, RewardResult, check_mode

#: What an agent may see of this reward (:mod:`intercode_agents.envs.reward_view`): tests passed, timed
#: out, ended as the gold's, and the position of the first one failed. Hidden: ``tests`` (how many hidden
#: tests there are), ``dropped_gold_failures`` and any part a scorer adds about the tests themselves.
AGENT_PARTS = frozenset({"passed", "timeouts", "same_as_gold", "first_failing_test"})


@dataclass(frozen=True)
class TestOutcome:
    """How one test statement ended."""

    __test__ = False  # not a pytest test class

    passed: bool
    error: str | None = None  # e.g. "AssertionError", "NameError: name 'f' is not defined"
    timed_out: bool = False
    # Why the scorer refused the result it was sent (malformed, too large, too slow to compare): the
    # test fails, and the reason goes into the reward's parts as ``refused_result``.
    refused: str | None = None


def _same(agent: TestOutcome, gold: TestOutcome) -> bool:
    return (agent.passed, agent.error, agent.timed_out) == (gold.passed, gold.error, gold.timed_out)


def _first_refusal(agent: Sequence[TestOutcome]) -> str:
    index, outcome = next((i, o) for i, o in enumerate(agent) if o.refused)
    return f"test {index}: {outcome.refused}"


def python_reward(
    tests: Sequence[str], agent: Sequence[TestOutcome], gold: Sequence[TestOutcome], mode: str = "intercode"
) -> RewardResult:
    """Score the agent's test outcomes against the gold's (see the module docstring)."""
    mode = check_mode(mode)
    if not (len(tests) == len(agent) == len(gold)):
        raise ConfigError(
            f"need one outcome per test for both sides: {len(tests)} tests, "
            f"{len(agent)} agent outcomes, {len(gold)} gold outcomes"
        )
    timeouts = sum(o.timed_out for o in agent)
    parts: dict[str, PartValue]
    refusals = {"refused_result": _first_refusal(agent)} if any(o.refused for o in agent) else {}
    if mode == "intercode":
        same = sum(_same(a, g) for a, g in zip(agent, gold, strict=True))
        parts = {
            "tests": len(tests),
            "same_as_gold": same,
            "passed": sum(o.passed for o in agent),
            "timeouts": timeouts,
            **refusals,
        }
        if not tests:
            return RewardResult(0.0, parts, note="the task has no tests")
        return RewardResult(same / len(tests), parts)

    kept = [i for i, g in enumerate(gold) if g.passed and not g.timed_out]
    passed = sum(agent[i].passed and not agent[i].timed_out for i in kept)
    failing = [i for i in kept if not (agent[i].passed and not agent[i].timed_out)]
    parts = {
        "tests": len(kept),
        "passed": passed,
        "dropped_gold_failures": len(tests) - len(kept),
        "timeouts": timeouts,
        # Its position, never its text: the tests (expected values included) stay the scorer's own,
        # and parts reach places an agent may read (a submit tool's artifact, an MCP client).
        "first_failing_test": failing[0] if failing else None,
        **refusals,
    }
    if not kept:
        return RewardResult(0.0, parts, corrupt=True, note="the gold fails every test; the task is unscored")
    return RewardResult(passed / len(kept), parts)

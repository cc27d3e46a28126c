"""Outcomes when things go wrong: model errors (retried or not), env errors, deadlines."""

from __future__ import annotations

import pytest

from intercode_agents import make_env
from intercode_agents.datasets import get_task
from intercode_agents.errors import UnknownTask
from intercode_agents.models.scripted import ScriptedChatModel
from intercode_agents.strategies import get_strategy

COUNT_ERRORS = "grep -c ERROR /testbed/logs/app.log"
FAST_RETRIES = {"retry_initial_wait_s": 0.01, "retry_max_wait_s": 0.05}


class RateLimitError(Exception):
    """Named like the providers' rate-limit errors."""


@pytest.fixture(scope="module")
async def bash_env():
    async with make_env("bash") as env:
        yield env


@pytest.mark.parametrize("strategy", ["try_again", "react", "plan_solve"])
async def test_transient_model_error_is_retried(bash_env, strategy: str) -> None:
    plan = ["1. Count the lines."] if strategy == "plan_solve" else []
    model = ScriptedChatModel(
        [*plan, RateLimitError("429"), TimeoutError("slow"), f"Action: {COUNT_ERRORS}", "submit"]
    )
    trajectory = await get_strategy(strategy, **FAST_RETRIES).run(bash_env, model, task_id="bash/mini/0")
    assert trajectory.outcome == "solved", trajectory.error


async def test_persistent_model_error_ends_as_model_error(bash_env) -> None:
    model = ScriptedChatModel([f"Action: {COUNT_ERRORS}", *[TimeoutError("the API is down")] * 4])
    strategy = get_strategy("react", model_retries=2, **FAST_RETRIES)
    trajectory = await strategy.run(bash_env, model, task_id="bash/mini/0")
    assert trajectory.outcome == "model_error"
    assert "3 attempt(s)" in (trajectory.error or "") and "the API is down" in (trajectory.error or "")
    assert [s.kind for s in trajectory.steps] == ["action"]  # the work before the failure is kept
    assert trajectory.reward is None


async def test_non_transient_model_error_is_not_retried(bash_env) -> None:
    model = ScriptedChatModel([ValueError("invalid API key"), "never used"])
    trajectory = await get_strategy("try_again", **FAST_RETRIES).run(bash_env, model, task_id="bash/mini/0")
    assert trajectory.outcome == "model_error" and "1 attempt(s)" in (trajectory.error or "")
    assert len(model.calls) == 1


async def test_env_failure_ends_as_env_error(bash_env) -> None:
    broken = get_task("bash/mini/0").model_copy(update={"image": "no-such-image-for-tests"})
    model = ScriptedChatModel(["Action: ls"])
    trajectory = await get_strategy("react").run(bash_env, model, task=broken)
    assert trajectory.outcome == "env_error"
    assert "reset failed" in (trajectory.error or "")


async def test_episode_deadline_ends_as_timeout(bash_env) -> None:
    model = ScriptedChatModel(["Action: sleep 20"])
    strategy = get_strategy("react", episode_timeout_s=1.5)
    trajectory = await strategy.run(bash_env, model, task_id="bash/mini/0")
    assert trajectory.outcome == "timeout" and "1.5 s" in (trajectory.error or "")
    assert trajectory.duration_s < 10


async def test_unknown_task_is_a_clear_error(bash_env) -> None:
    with pytest.raises(UnknownTask):
        await get_strategy("react").run(bash_env, ScriptedChatModel([]), task_id="bash/mini/999")

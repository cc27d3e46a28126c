"""What the rates count: agent-caused failures always, corrupt golds and persistent env/model errors
never, and every episode left out is listed with its reason next to the denominator."""

from __future__ import annotations

import pytest
from rich.console import Console

from intercode_agents.metrics.summary import exclusion_reason, summarize
from intercode_agents.models.pricing import parse_price_table
from intercode_agents.report.terminal import summary_table
from intercode_agents.trajectory import FailedAttempt, Step, Trajectory

PRICES = parse_price_table({"models": {"m": {"input": 1.0, "output": 2.0}}}, "test")
LOST = {"sandbox_lost": True, "sandbox_lost_reason": "the agent's shell was killed"}


def episode(task: str, outcome: str, reward: float | None, **fields: object) -> Trajectory:
    steps = [
        Step(turn=1, action="ls", observation="x"),
        Step(turn=2, kind="submit", action="submit", reward=reward),
    ]
    return Trajectory(
        task_id=task,
        env="bash",
        strategy="react",
        model="openai:m",
        steps=steps,
        reward=reward,
        outcome=outcome,
        **fields,
    )


def settled(task: str, reward: float, parts: dict[str, object]) -> Trajectory:
    """A submitted episode whose outcome the record schema derives, as the strategies do."""
    traj = episode(task, "failed", reward, reward_parts=parts)
    traj.settle()
    return traj


def test_a_destroyed_sandbox_is_a_failure_whatever_the_reward() -> None:
    assert settled("t", 0.0, LOST).outcome == "failed"
    assert settled("t", 1.0, LOST).outcome == "failed"  # never solved, even if a part scored
    assert settled("t", 1.0, {}).outcome == "solved"
    assert settled("t", 0.33 * 3 + 0.01, {}).outcome == "solved"  # float parts a hair under 1.0


def test_sabotage_lowers_the_success_rate_instead_of_leaving_it(capsys: pytest.CaptureFixture[str]) -> None:
    # The run: one honest solve, two agents that killed their sandbox before a wrong submit.
    # Counted as env errors they left the rate at 1/1; as failures the rate is 1/3.
    records = [
        episode("bash/x/0", "solved", 1.0),
        settled("bash/x/1", 0.0, LOST),
        settled("bash/x/2", 0.0, LOST),
    ]
    s = summarize(records, prices=PRICES)
    assert s["success_rate"] == pytest.approx(1 / 3)
    assert s["denominator"] == {"planned": None, "recorded": 3, "scored": 3, "excluded": 0, "not_run": None}
    assert s["excluded"]["episodes"] == []
    assert s["failure_modes"]["counts"]["sandbox_destroyed"] == 2
    assert s["failure_modes"]["shares"]["sandbox_destroyed"] == 1.0


def test_a_gold_that_cannot_run_is_excluded_and_listed_never_a_free_reward() -> None:
    free = episode("sql/spider/164", "solved", 1.0, reward_parts={"gold_failed": True, "iou": 1.0})
    marked = settled("sql/spider/178", 0.0, {"corrupt": True})
    assert marked.outcome == "corrupt" and marked.error
    free_win = settled("sql/spider/225", 1.0, {"gold_failed": True})
    assert (free_win.outcome, free_win.reward, free_win.reward_parts["unscored_reward"]) == (
        "corrupt",
        None,
        1.0,
    )
    honest = episode("sql/spider/1", "failed", 0.0, reward_parts={"gold_failed": False})
    s = summarize([free, marked, honest], prices=PRICES)
    assert (s["n_scored"], s["n_solved"], s["success_rate"], s["mean_reward"]) == (1, 0, 0.0, 0.0)
    assert [(e["task_id"], e["reason"]) for e in s["excluded"]["episodes"]] == [
        ("sql/spider/164", "corrupt_gold"),
        ("sql/spider/178", "corrupt_gold"),
    ]
    assert s["excluded"]["counts"] == {"corrupt_gold": 2, "env_error": 0, "model_error": 0}
    assert s["by_env"]["bash"] == {"n": 3, "scored": 1, "solved": 0, "success_rate": 0.0, "mean_reward": 0.0}


def test_the_denominator_adds_up_and_lists_every_excluded_episode() -> None:
    engine = "SessionDied: the sandbox's container has stopped"
    records = [
        episode("bash/x/0", "solved", 1.0),
        episode("bash/x/1", "failed", 0.0),
        episode("bash/x/2", "timeout", None),
        episode(
            "bash/x/3", "env_error", None, error=engine, retries=[FailedAttempt(outcome="env_error")] * 2
        ),
        episode("bash/x/4", "model_error", None, error="the model call failed after 4 attempt(s)"),
        episode("bash/x/5", "corrupt", 0.0, reward_parts={"corrupt": True}),
    ]
    s = summarize(records, prices=PRICES, planned=8)
    # 8 planned = 3 scored (solved, failed, timeout) + 3 excluded + 2 never recorded
    assert s["denominator"] == {"planned": 8, "recorded": 6, "scored": 3, "excluded": 3, "not_run": 2}
    assert s["success_rate"] == pytest.approx(1 / 3)
    listed = [(e["task_id"], e["reason"], e["attempts"], e["error"]) for e in s["excluded"]["episodes"]]
    assert listed == [
        ("bash/x/3", "env_error", 3, engine),
        ("bash/x/4", "model_error", 1, "the model call failed after 4 attempt(s)"),
        ("bash/x/5", "corrupt_gold", 1, None),
    ]
    assert [exclusion_reason(r) for r in records] == [
        None,
        None,
        None,
        "env_error",
        "model_error",
        "corrupt_gold",
    ]
    assert s["retried"] == {"episodes": 1, "failed_attempts": 2}


def test_retried_attempts_count_in_tokens_and_cost() -> None:
    earlier = FailedAttempt(outcome="env_error", input_tokens=1000, output_tokens=100)
    traj = episode("bash/x/0", "solved", 1.0, input_tokens=2000, output_tokens=200, retries=[earlier])
    s = summarize([traj], prices=PRICES)
    assert (s["tokens"]["input"], s["tokens"]["output"]) == (3000, 300)
    # (3000 * 1 + 300 * 2) / 1e6
    assert s["cost"]["total_usd"] == pytest.approx(0.0036)
    traj.retries = [earlier.model_copy(update={"cost_usd": 0.5})]
    traj.cost_usd = 0.25
    assert summarize([traj], prices=PRICES)["cost"]["total_usd"] == pytest.approx(0.75)


def test_the_summary_table_shows_the_denominator_every_exclusion_and_every_uncounted_record() -> None:
    records = [
        episode("bash/x/0", "solved", 1.0),
        settled("bash/x/1", 0.0, LOST),
        episode("bash/x/2", "failed", 0.0),
        episode("bash/x/3", "env_error", None, retries=[FailedAttempt(outcome="env_error")] * 2),
        episode("bash/x/4", "corrupt", 0.0, reward_parts={"corrupt": True}),
        episode("bash/x/5", "corrupt", 0.0, reward_parts={"corrupt": True}, epoch=2),
    ]
    ignored = [{"line": 9, "task_id": "bash/x/1", "epoch": 1, "why": "a duplicate of the record on line 2"}]
    s = summarize(records, prices=PRICES, planned=7, ignored=ignored)
    console = Console(record=True, width=300)
    console.print(summary_table(s))
    text = " ".join(console.export_text().split())
    assert "7 planned = 3 scored + 3 excluded + 1 not run" in text
    assert "success rate │ 33.3% (1 of 3 scored)" in text
    assert (
        "excluded: corrupt gold (the task's gold answer cannot run) │ 2: bash/x/4, bash/x/5 (epoch 2)" in text
    )
    assert "after retries │ 1: bash/x/3 [3 attempts]" in text
    assert "records not counted │ 1: line 9 (bash/x/1): a duplicate of the record on line 2" in text

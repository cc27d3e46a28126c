"""Episodes without a chat model: the gold policy's actions, replayable actions, forced submits."""

from __future__ import annotations

import os

from intercode_agents.datasets import get_task
from intercode_agents.envs import make_env
from intercode_agents.runner.direct import DIRECT, gold_actions, play_direct, replayable_actions, scripted
from intercode_agents.trajectory import Step, Trajectory

os.environ.setdefault("INTERCODE_DATA", "/work/shared/intercode-data")


def test_gold_actions_follow_each_envs_submit_form() -> None:
    bash, sql = get_task("bash/mini/0"), get_task("sql/mini/0")
    python, ctf = get_task("python/mini/0"), get_task("ctf/mini/0")
    assert gold_actions(bash) == [bash.gold, "submit"]
    assert gold_actions(sql) == [sql.gold, "submit"]
    assert gold_actions(python) == [python.gold, f"submit {python.meta['entry_point']}"]
    assert gold_actions(ctf) == [f"submit {ctf.gold}"]


def test_replayable_actions_leave_out_replies_the_parser_rejected() -> None:
    traj = Trajectory(
        task_id="bash/mini/0",
        env="bash",
        strategy="react",
        model="m",
        steps=[
            Step(turn=1, kind="invalid", action="I think I should look around"),
            Step(turn=2, action="ls /testbed"),
            Step(turn=3, kind="submit", action="submit"),
        ],
    )
    assert replayable_actions(traj) == ["ls /testbed", "submit"]


async def test_direct_play_records_steps_and_forces_a_submit_at_the_budget() -> None:
    task = get_task("bash/mini/0")
    async with make_env("bash") as env:
        traj = await play_direct(
            env, task, scripted(["echo one", "echo two", "echo three"]), model="script", seed=7, max_turns=2
        )
    assert (traj.strategy, traj.model, traj.seed, traj.env) == (DIRECT, "script", 7, "bash")
    assert [s.kind for s in traj.steps] == ["action", "action", "submit"]
    assert [s.action for s in traj.steps] == ["echo one", "echo two", "submit"]
    assert traj.steps[1].observation.strip() == "two" and traj.steps[0].exit_code == 0
    assert traj.steps[-1].thought is not None  # marked as forced
    assert traj.outcome == "failed" and traj.reward is not None and traj.reward < 1
    assert traj.reward_parts and traj.steps[-1].reward == traj.reward
    assert traj.group == dict(task.group)


async def test_gold_play_solves_a_python_task_with_its_entry_point() -> None:
    task = get_task("python/mini/1")
    async with make_env("python") as env:
        traj = await play_direct(env, task, scripted(gold_actions(task, env)), model="gold")
    assert traj.outcome == "solved" and traj.reward == 1.0
    assert traj.steps[-1].action == f"submit {task.meta['entry_point']}"


def test_gold_report_counts_a_failing_gold_as_corrupt_and_only_real_failures_as_failed() -> None:
    from intercode_agents.runner.gold import classify

    def traj(task_id: str, reward: float, outcome: str, **parts: object) -> Trajectory:
        return Trajectory(
            task_id=task_id,
            env="sql",
            strategy=DIRECT,
            model="gold",
            reward=reward,
            outcome=outcome,
            reward_parts=parts,
        )

    records = [
        traj("sql/spider/10", 1.0, "solved", gold_failed=False),
        traj("sql/spider/2", 1.0, "solved", gold_failed=False),
        traj("sql/spider/164", 0.0, "failed", gold_failed=True),
        traj("sql/spider/7", 0.5, "failed", gold_failed=False, iou=0.5),
    ]
    report = classify("sql", "intercode", records, wall_s=2.0, concurrency=4)
    assert [r.task_id for r in report.solved] == ["sql/spider/2", "sql/spider/10"]
    assert [r.task_id for r in report.corrupt] == ["sql/spider/164"]
    assert [r.task_id for r in report.failed] == ["sql/spider/7"] and not report.ok
    payload = report.to_json()
    assert payload["n_failed"] == 1 and payload["episodes_per_s"] == 2.0
    assert payload["failed"][0]["parts"]["iou"] == 0.5


def test_gold_report_sorts_task_ids_of_different_depths() -> None:
    from intercode_agents.runner.gold import classify

    ids = ["ctf/mini/0", "ctf/10", "ctf/9", "ctf/mini/2"]
    records = [
        Trajectory(task_id=i, env="ctf", strategy=DIRECT, model="gold", reward=1.0, outcome="solved")
        for i in ids
    ]
    report = classify("ctf", "intercode", records, wall_s=1.0, concurrency=1)
    assert [r.task_id for r in report.solved] == ["ctf/9", "ctf/10", "ctf/mini/0", "ctf/mini/2"]

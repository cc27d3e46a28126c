"""Which records of a run directory count (issue 13, finding 7): one per planned episode; duplicates
and foreign records are reported and never counted, the same way on resume and in the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from intercode_agents.errors import ConfigError
from intercode_agents.report import load_run, write_report
from intercode_agents.runner.run_dir import write_json
from intercode_agents.runner.run_records import RunPlan, epoch_seed, read_run_records
from intercode_agents.trajectory import FailedAttempt, Step, Trajectory

TASKS = [f"bash/mini/{n}" for n in range(4)]
SETTINGS = {
    "env": "bash",
    "task_ids": TASKS,
    "seed": 7,
    "strategy": "react",
    "model": "m",
    "reward": "intercode",
    "turns": 5,
    "turn_budget": 5,
}
PLAN = RunPlan.from_settings(SETTINGS)


def record(task_id: str, outcome: str = "failed", **fields: object) -> Trajectory:
    reward = 1.0 if outcome == "solved" else 0.0 if outcome == "failed" else None
    values: dict[str, object] = {
        "task_id": task_id,
        "env": "bash",
        "strategy": "react",
        "model": "m",
        "seed": 7,
        "reward": reward,
        "outcome": outcome,
        "steps": [Step(turn=1, action="ls", reward=reward)],
    }
    return Trajectory(**(values | fields))


def run_dir(root: Path, records: list[Trajectory], settings: dict[str, object] | None = SETTINGS) -> Path:
    root.mkdir(parents=True)
    if settings is not None:
        write_json(root / "run.json", dict(settings))
    (root / "trajectories.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in records))
    return root


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({"env": "sql", "task_id": "sql/mini/0"}, "env 'sql' is not the run's ('bash')"),
        ({"task_id": "bash/mini/7"}, "task bash/mini/7 is not in the run"),
        ({"epoch": 2}, "epoch 2 is not in the run (1 epoch(s))"),
        ({"seed": 8}, "seed 8 is not the run's seed for epoch 1 (7)"),
        ({"seed": None}, "seed None is not the run's seed for epoch 1 (7)"),
        ({"strategy": "try_again"}, "strategy 'try_again' is not the run's ('react')"),
        ({"model": "other"}, "model 'other' is not the run's ('m')"),
        ({"reward_mode": "strict"}, "reward mode 'strict' is not the run's ('intercode')"),
    ],
)
def test_a_foreign_record_is_named_with_its_reason(changes: dict[str, object], why: str) -> None:
    assert PLAN.foreign(record("bash/mini/0")) is None
    assert PLAN.foreign(record("bash/mini/0").model_copy(update=changes)) == why


def test_the_plan_has_one_episode_per_task_and_epoch_with_seeds_per_epoch() -> None:
    plan = RunPlan.from_settings(SETTINGS | {"epochs": 2})
    assert plan.size == 8 and plan.keys()[:5] == [(t, 1) for t in TASKS] + [(TASKS[0], 2)]
    assert [epoch_seed(7, e) for e in (1, 2, 3)] == [7, 8, 9] and epoch_seed(None, 2) is None
    assert plan.foreign(record(TASKS[0], epoch=2, seed=8)) is None
    with pytest.raises(ConfigError, match="do not describe a run"):
        RunPlan.from_settings({"env": "bash"})


def test_five_records_for_four_tasks_count_four(tmp_path: Path) -> None:
    # the file: every task once, one of them twice, and a record of a task outside the run
    records = [record(t, "solved" if t.endswith("0") else "failed") for t in TASKS]
    stray = record("bash/mini/0", "solved")
    foreign = record("bash/fs1/3", "solved")
    directory = run_dir(tmp_path / "run", [*records[:2], stray, *records[2:], foreign, records[1]])
    read = read_run_records(directory / "trajectories.jsonl", PLAN)
    assert [t.task_id for t in read.records] == TASKS
    assert [(i.line, i.task_id, i.why) for i in read.ignored] == [
        (3, "bash/mini/0", "a duplicate of the record on line 1"),
        (6, "bash/fs1/3", "task bash/fs1/3 is not in the run"),
        (7, "bash/mini/1", "a duplicate of the record on line 2"),
    ]
    run = load_run(directory)
    assert run.summary["n_episodes"] == 4 and run.summary["success_rate"] == 0.25
    assert [r["line"] for r in run.summary["ignored_records"]] == [3, 6, 7]
    md = write_report([directory])[1].read_text()
    assert "| Success rate | 25.0% (1 of 4 scored) |" in md
    assert "## Records not counted (3)" in md
    assert "| line 6 (bash/fs1/3) | task bash/fs1/3 is not in the run |" in md


def test_only_a_retry_of_a_recorded_error_replaces_it(tmp_path: Path) -> None:
    error = record(TASKS[0], "env_error", error="SessionDied: engine")
    retry = record(TASKS[0], "solved", retries=[FailedAttempt.of(error)])
    failure = record(TASKS[1], "failed")
    second_chance = record(TASKS[1], "solved", retries=[FailedAttempt(outcome="env_error")])
    directory = run_dir(tmp_path / "run", [error, failure, retry, second_chance])
    read = read_run_records(directory / "trajectories.jsonl", PLAN)
    assert [(t.task_id, t.outcome) for t in read.records] == [(TASKS[0], "solved"), (TASKS[1], "failed")]
    assert [t.outcome for t in read.superseded] == ["env_error"]
    # a failure is final: a later "solved" record of it is a duplicate, whatever it claims
    assert [(i.line, i.why) for i in read.ignored] == [(4, "a duplicate of the record on line 2")]


def test_resume_refuses_a_corrupt_middle_line_and_the_report_lists_it(tmp_path: Path) -> None:
    directory = run_dir(tmp_path / "run", [record(TASKS[0])])
    with (directory / "trajectories.jsonl").open("a") as handle:
        handle.write("{not json\n" + record(TASKS[1]).model_dump_json() + "\n" + '{"task_id": "torn')
    with pytest.raises(ConfigError, match="line 2 is not a trajectory record"):
        read_run_records(directory / "trajectories.jsonl", PLAN)
    run = load_run(directory)
    assert [t.task_id for t in run.trajectories.values()] == TASKS[:2]
    assert [i.line for i in run.ignored] == [2, 4]
    assert "torn end of a write" in run.ignored[1].why


def test_a_report_without_run_json_still_drops_duplicates(tmp_path: Path) -> None:
    directory = run_dir(tmp_path / "run", [record(TASKS[0]), record(TASKS[0], "solved")], settings=None)
    run = load_run(directory)
    assert [t.outcome for t in run.trajectories.values()] == ["failed"]
    assert run.plan_note.startswith("no run.json")
    summary = run.summary
    assert summary["denominator"]["planned"] is None and len(summary["ignored_records"]) == 1
    assert json.loads(json.dumps(summary)) == summary

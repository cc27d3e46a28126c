"""The run directory's files: records appended with fsync, a torn last line tolerated and cut off."""

from __future__ import annotations

from pathlib import Path

import pytest

from intercode_agents.errors import ConfigError
from intercode_agents.runner.progress import RunProgress
from intercode_agents.runner.run_dir import (
    RecordWriter,
    read_records,
    read_run_settings,
    settings_mismatch,
    write_json,
)
from intercode_agents.trajectory import Step, Trajectory


def record(task_id: str, outcome: str = "solved", reward: float | None = 1.0) -> Trajectory:
    return Trajectory(
        task_id=task_id,
        env="bash",
        strategy="direct",
        model="gold",
        outcome=outcome,
        reward=reward,
        steps=[Step(turn=1, action="ls"), Step(turn=2, kind="submit", action="submit", reward=reward)],
    )


def test_records_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "trajectories.jsonl"
    with RecordWriter(path) as writer:
        writer.write(record("bash/mini/0"))
        writer.write(record("bash/mini/1", "failed", 0.33))
    records, valid = read_records(path)
    assert [r.task_id for r in records] == ["bash/mini/0", "bash/mini/1"]
    assert records[1].reward == 0.33 and records[1].steps[1].kind == "submit"
    assert valid == path.stat().st_size


def test_torn_last_line_is_skipped_and_cut_before_appending(tmp_path: Path) -> None:
    path = tmp_path / "trajectories.jsonl"
    with RecordWriter(path) as writer:
        writer.write(record("bash/mini/0"))
    whole = path.read_bytes()
    torn = record("bash/mini/1").model_dump_json().encode()[:40]
    path.write_bytes(whole + torn)  # a crash in the middle of a write

    records, valid = read_records(path)
    assert [r.task_id for r in records] == ["bash/mini/0"]
    assert valid == len(whole)

    with RecordWriter(path, valid_length=valid) as writer:
        writer.write(record("bash/mini/1"))
    records, _ = read_records(path)
    assert [r.task_id for r in records] == ["bash/mini/0", "bash/mini/1"]
    assert path.read_bytes().count(b"\n") == 2


def test_missing_final_newline_gets_one_before_the_next_record(tmp_path: Path) -> None:
    path = tmp_path / "trajectories.jsonl"
    path.write_text(record("bash/mini/0").model_dump_json())  # valid, but no newline
    with RecordWriter(path) as writer:
        writer.write(record("bash/mini/1"))
    assert [r.task_id for r in read_records(path)[0]] == ["bash/mini/0", "bash/mini/1"]


def test_a_corrupt_line_in_the_middle_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "trajectories.jsonl"
    lines = [record("bash/mini/0").model_dump_json(), "{not json", record("bash/mini/1").model_dump_json()]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match="line 2"):
        read_records(path)


def test_settings_mismatch_names_each_difference(tmp_path: Path) -> None:
    saved = {"env": "bash", "turns": 10, "model": "gold", "task_ids": ["a", "b"], "seed": None}
    write_json(tmp_path / "run.json", saved)
    loaded = read_run_settings(tmp_path)
    assert settings_mismatch(loaded, dict(saved)) == []
    problems = settings_mismatch(loaded, {**saved, "turns": 3, "task_ids": ["a", "b", "c"]})
    assert any(p.startswith("turns: 10 -> 3") for p in problems)
    assert any("1 added" in p for p in problems)
    with pytest.raises(ConfigError, match=r"no run\.json"):
        read_run_settings(tmp_path / "elsewhere")


def test_progress_counts_previous_and_new_episodes() -> None:
    bar = RunProgress(4, previous=[record("a"), record("b", "env_error", None)], enabled=False)
    bar.advance(record("c", "failed", 0.0))
    assert (bar.done, bar.solved, bar.scored, bar.excluded, bar.new) == (3, 1, 2, 1, 1)
    assert "solved 1 (50%)" in bar.stats() and "excluded 1" in bar.stats()
    bar.advance(record("d", "solved", 1.0).model_copy(update={"reward_parts": {"gold_failed": True}}))
    assert (bar.solved, bar.scored, bar.excluded) == (1, 2, 2)  # a corrupt gold is never a free solve

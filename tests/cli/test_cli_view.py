"""``intercode-agents view``: writes the report when missing or stale, and prints its path where no
browser can open (as on this headless machine)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from intercode_agents.trajectory import Step, Trajectory
from tests.cli.test_cli_run_commands import cli

HEADLESS = {"DISPLAY": "", "WAYLAND_DISPLAY": ""}


def run_dir(path: Path, outcome: str = "solved") -> Path:
    path.mkdir(parents=True)
    traj = Trajectory(
        task_id="bash/mini/0",
        env="bash",
        strategy="react",
        model="local",
        steps=[Step(turn=1, action="ls", observation="a")],
        reward=1.0 if outcome == "solved" else 0.0,
        outcome=outcome,
    )
    (path / "trajectories.jsonl").write_text(traj.model_dump_json() + "\n")
    return path


def test_view_writes_the_report_and_prints_its_path_without_a_browser(tmp_path: Path) -> None:
    run = run_dir(tmp_path / "run")
    result = cli(["view", str(run)], env=HEADLESS)
    assert result.returncode == 0, result.stderr
    report = (run / "report.html").resolve()
    assert report.is_file()
    assert f"report: {report}" in result.stdout and report.as_uri() in " ".join(result.stdout.split())


def test_view_refreshes_a_stale_report_and_keeps_a_fresh_one(tmp_path: Path) -> None:
    run = run_dir(tmp_path / "run")
    assert cli(["view", str(run), "--print"]).returncode == 0
    report = run / "report.html"
    first = report.stat().st_mtime_ns
    assert cli(["view", str(run), "--print"]).returncode == 0
    assert report.stat().st_mtime_ns == first  # nothing changed: the report stays
    time.sleep(0.05)
    records = run / "trajectories.jsonl"
    records.write_text(records.read_text())  # newer records
    os.utime(records, None)
    assert cli(["view", str(run), "--print"]).returncode == 0
    assert report.stat().st_mtime_ns > first


def test_view_of_a_folder_of_runs_compares_them(tmp_path: Path) -> None:
    run_dir(tmp_path / "cmp" / "a")
    run_dir(tmp_path / "cmp" / "b", outcome="failed")
    result = cli(["view", str(tmp_path / "cmp"), "--print"])
    assert result.returncode == 0, result.stderr
    assert "1 solved only in A" in (tmp_path / "cmp" / "report.md").read_text()


def test_view_errors(tmp_path: Path) -> None:
    missing = cli(["view", str(tmp_path / "nope")])
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    (tmp_path / "empty").mkdir()
    empty = cli(["view", str(tmp_path / "empty")])
    assert empty.returncode == 2 and "holds no trajectories.jsonl" in empty.stderr

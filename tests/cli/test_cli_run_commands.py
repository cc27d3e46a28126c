"""The run commands as a user types them: gold, eval errors, replay, report, play and a human eval."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.docker_helpers import containers_of_run

CLI = [sys.executable, "-c", "from intercode_agents.cli import main; main()"]
DATA = os.environ.get("INTERCODE_DATA", "/work/shared/intercode-data")


def cli(
    args: list[str],
    *,
    stdin: str | None = None,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 600,
) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "INTERCODE_DATA": DATA, "COLUMNS": "200", **(env or {})}
    return subprocess.run(
        [*CLI, *args], input=stdin, env=environ, cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.parametrize("env", ["bash", "sql", "python", "ctf"])
def test_gold_solves_every_mini_task_and_json_parses(env: str) -> None:
    result = cli(["gold", env, "--tasks", "mini", "--json", "-c", "4"])
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["env"] == env and report["ok"] is True
    assert report["n_failed"] == 0 and report["n_corrupt"] == 0
    assert report["n_solved"] == report["total"] >= 5
    assert all(r["reward"] == 1.0 and r["task_id"].startswith(f"{env}/mini/") for r in report["solved"])
    assert report["episodes_per_s"] > 0


def test_gold_table_lists_the_solved_tasks_with_their_rewards() -> None:
    result = cli(["gold", "sql", "--tasks", "sql/mini/0,sql/mini/1", "--no-progress"])
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "solved (2): sql/mini/0=1 sql/mini/1=1" in text
    assert "2 tasks, 2 solved, 0 failed, 0 corrupt" in text and "episodes/s" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["eval", "nope", "--model", "gold"], "unknown env 'nope'"),
        (
            ["eval", "bash", "--model", "local", "--strategy", "nope", "--tasks", "mini"],
            "unknown strategy 'nope'",
        ),
        (
            ["eval", "bash", "--model", "nope:x", "--strategy", "react", "--tasks", "mini"],
            "unknown model provider",
        ),
        (["eval", "bash", "--model", "gold", "--tasks", "bash/fs1/9999"], "unknown task 'bash/fs1/9999'"),
        (["eval", "bash", "--model", "local", "--tasks", "mini"], "needs a strategy"),
        (["eval", "bash", "--model", "gold", "--tasks", "mini", "--resume"], "--out DIR"),
        (["gold", "nope"], "unknown env 'nope'"),
        (["gold", "sql", "--tasks", "sql/spider/99999"], "unknown task"),
        (["play", "bash", "--task", "sql/mini/0"], "belongs to env 'sql'"),
        (["replay", "/nonexistent/trajectories.jsonl"], "no such trajectory file"),
        (["report", "/nonexistent-run"], "does not exist"),
    ],
)
def test_bad_arguments_are_one_line_with_exit_code_2(args: list[str], message: str, tmp_path: Path) -> None:
    result = cli(args, cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert message in result.stderr
    assert result.stderr.startswith("error:") and "Traceback" not in result.stderr
    assert not list(tmp_path.iterdir())  # no run directory was started


def test_a_dead_engine_is_one_clear_line(tmp_path: Path) -> None:
    result = cli(
        ["eval", "sql", "--model", "gold", "--tasks", "mini", "--out", str(tmp_path / "run")],
        env={"DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"},
    )
    assert result.returncode == 2
    assert "Docker Engine is not reachable" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "run").exists()


def test_eval_replay_and_report_of_a_gold_run(tmp_path: Path) -> None:
    out = tmp_path / "run"
    ran = cli(["eval", "sql", "--model", "gold", "--tasks", "mini", "-c", "2", "--out", str(out)])
    assert ran.returncode == 0, ran.stderr
    assert "Run summary" in ran.stdout and "success rate" in ran.stdout and "100.0%" in ran.stdout
    assert f"report:  {out / 'report.html'}" in ran.stdout and (out / "report.html").is_file()

    same = cli(["replay", str(out), "--json"])
    assert same.returncode == 0, same.stderr
    payload = json.loads(same.stdout)
    assert payload["replayed"] == 6 and payload["changed"] == []

    lines = (out / "trajectories.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first["reward"] = 0.0
    tampered = tmp_path / "tampered.jsonl"
    tampered.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    changed = cli(["replay", str(tampered), "--no-progress"])
    assert changed.returncode == 1
    assert first["task_id"] in changed.stdout and "5 reproduced, 1 changed" in changed.stdout

    report = cli(["report", str(out), "-o", str(tmp_path / "cmp.html")])
    assert report.returncode == 0, report.stderr
    assert "<svg" in (tmp_path / "cmp.html").read_text() and (tmp_path / "cmp.md").is_file()


def test_play_reads_actions_from_the_terminal_and_shows_the_reward() -> None:
    run_id = "test" + uuid.uuid4().hex[:8]
    typed = "grep -c ERROR /testbed/logs/app.log\nsubmit\n"
    result = cli(
        ["play", "bash", "--task", "bash/mini/0"], stdin=typed, env={"INTERCODE_AGENTS_RUN_ID": run_id}
    )
    assert result.returncode == 0, result.stderr
    assert "Count the lines of /testbed/logs/app.log" in result.stdout
    assert "Reward: 1 (solved)" in result.stdout
    assert containers_of_run(run_id) == []


def test_play_takes_a_fenced_multi_line_python_block() -> None:
    typed = "```\ndef add(a, b):\n    return a + b\n```\nprint(add(2, 3))\nsubmit add\n"
    result = cli(["play", "python", "--task", "python/mini/0"], stdin=typed)
    assert result.returncode == 0, result.stderr
    assert "\n5\n" in result.stdout.replace("python> ", "\n")
    assert "Reward:" in result.stdout


def test_eval_with_a_human_records_the_typed_actions(tmp_path: Path) -> None:
    out = tmp_path / "human"
    typed = "SELECT 1\n:quit\n"
    result = cli(
        ["eval", "sql", "--model", "human", "--tasks", "sql/mini/0", "--turns", "3", "--out", str(out)],
        stdin=typed,
    )
    assert result.returncode == 0, result.stderr
    record = json.loads((out / "trajectories.jsonl").read_text())
    assert (record["model"], record["strategy"]) == ("human", "direct")
    assert [s["action"] for s in record["steps"]] == ["SELECT 1", "submit"]
    assert record["outcome"] == "failed" and record["reward"] < 1

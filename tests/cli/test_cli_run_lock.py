"""``eval`` processes on one run directory (issue 13, finding 7): a second ``--resume`` while the first
runs stops with a clear error, and the lock of a SIGKILLed eval is taken over by the next one.

A human player (actions from stdin) keeps an eval waiting as long as the test likes, so the order of
events is certain."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from intercode_agents.runner.run_dir import read_records
from tests.docker_helpers import containers_of_run

CLI = [sys.executable, "-c", "from intercode_agents.cli import main; main()"]
DATA = os.environ.get("INTERCODE_DATA", "/work/shared/intercode-data")


def environ(run_id: str) -> dict[str, str]:
    return {**os.environ, "INTERCODE_DATA": DATA, "INTERCODE_AGENTS_RUN_ID": run_id, "COLUMNS": "200"}


def start(args: list[str], run_id: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*CLI, *args],
        env=environ(run_id),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_holder(proc: subprocess.Popen[str], out: Path, timeout: float = 120) -> None:
    """Until ``proc`` holds the lock of ``out`` and has written the run's settings."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"eval ended early (rc {proc.returncode}): {proc.communicate()[1][-2000:]}")
        try:
            holder = json.loads((out / "run.lock").read_text() or "{}")
        except (FileNotFoundError, json.JSONDecodeError):
            holder = {}
        if holder.get("pid") == proc.pid and (out / "run.json").is_file():
            return
        time.sleep(0.05)
    raise AssertionError(f"eval {proc.pid} did not take the lock of {out} within {timeout} s")


def test_a_second_resume_is_refused_and_a_killed_evals_lock_is_taken_over(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["eval", "sql", "--model", "human", "--tasks", "mini", "--turns", "2", "--out", str(out)]
    killed_run = "test" + uuid.uuid4().hex[:8]
    killed = start(args, killed_run)
    try:
        wait_for_holder(killed, out)
    finally:
        killed.send_signal(signal.SIGKILL)
        killed.communicate(timeout=30)
    assert json.loads((out / "run.lock").read_text())["pid"] == killed.pid  # left behind
    cleanup = subprocess.run([*CLI, "cleanup"], env=environ("test-cleanup"), capture_output=True, timeout=120)
    assert cleanup.returncode == 0 and containers_of_run(killed_run) == []

    run_id = "test" + uuid.uuid4().hex[:8]
    first = start([*args, "--resume"], run_id)
    try:
        wait_for_holder(first, out)  # it took over the dead process's lock without waiting
        second = subprocess.run(
            [*CLI, *args, "--resume"],
            env=environ(run_id),
            input="",
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert second.returncode == 2, second.stdout + second.stderr
        message = " ".join(second.stderr.split())
        assert message.startswith(f"error: the run directory {out} is being written by another process")
        assert f"(PID {first.pid} on " in message and "choose another --out" in message
        assert "Traceback" not in second.stderr
        stdout, stderr = first.communicate(input=":quit\n" * 6, timeout=300)
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate()
    assert first.returncode == 0, stderr
    assert f"took over the lock of {out} left by a process that is gone (PID {killed.pid} " in " ".join(
        stdout.split()
    )
    records, _ = read_records(out / "trajectories.jsonl")
    assert sorted(r.task_id for r in records) == [f"sql/mini/{n}" for n in range(6)]
    assert (out / "run.lock").read_text() == ""
    assert containers_of_run(run_id) == []

"""``eval`` as a user runs it: killed (SIGKILL), interrupted (SIGINT/SIGTERM), then resumed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from intercode_agents.runner.run_dir import read_records
from tests.docker_helpers import containers_of_run

CLI = [sys.executable, "-c", "from intercode_agents.cli import main; main()"]
DATA = os.environ.get("INTERCODE_DATA", "/work/shared/intercode-data")


def cli_env(run_id: str) -> dict[str, str]:
    return {**os.environ, "INTERCODE_DATA": DATA, "INTERCODE_AGENTS_RUN_ID": run_id, "COLUMNS": "200"}


def start(args: list[str], run_id: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*CLI, *args],
        env=cli_env(run_id),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def cli(args: list[str], run_id: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args],
        env=cli_env(run_id),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def wait_for_records(proc: subprocess.Popen[str], path: Path, at_least: int, timeout: float = 300) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"eval ended early (rc {proc.returncode}): {proc.stderr.read()[-2000:]}")
        if path.is_file() and path.read_bytes().count(b"\n") >= at_least:
            return path.read_bytes().count(b"\n")
        time.sleep(0.05)
    raise AssertionError(f"fewer than {at_least} records after {timeout} s")


def new_run_id() -> str:
    return "test" + uuid.uuid4().hex[:8]


def test_sigkill_halfway_then_cleanup_and_resume_records_every_task_once(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["eval", "sql", "--model", "gold", "--tasks", "spider", "--limit", "40", "-c", "2"]
    args += ["--out", str(out), "--no-progress"]
    first = new_run_id()
    proc = start(args, first)
    wait_for_records(proc, out / "trajectories.jsonl", at_least=5)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    proc.stdout.close()
    proc.stderr.close()
    killed_with, _ = read_records(out / "trajectories.jsonl")
    assert 5 <= len(killed_with) < 40
    assert containers_of_run(first), "a SIGKILL leaves the run's containers behind"

    cleanup = cli(["cleanup"], new_run_id())
    assert cleanup.returncode == 0, cleanup.stderr
    assert containers_of_run(first) == []

    second = new_run_id()
    resumed = cli([*args, "--resume"], second)
    assert resumed.returncode == 0, resumed.stderr
    records, _ = read_records(out / "trajectories.jsonl")
    ids = [r.task_id for r in records]
    assert len(ids) == len(set(ids)) == 40
    assert [r.task_id for r in records[: len(killed_with)]] == [r.task_id for r in killed_with]
    assert "this session" in resumed.stdout and f"{40 - len(killed_with)} episodes" in resumed.stdout
    assert containers_of_run(second) == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_stops_cleanly_keeps_records_removes_containers_and_prints_the_resume_command(
    tmp_path: Path, sig: signal.Signals
) -> None:
    out = tmp_path / "run"
    run_id = new_run_id()
    # 25 epochs of the 8 mini tasks: from the second epoch on a gold episode on warm pools takes a
    # few tens of milliseconds, and 4 epochs (32 episodes) were once all done before the signal landed
    args = ["eval", "bash", "--model", "gold", "--tasks", "mini", "--epochs", "25", "-c", "2"]
    proc = start([*args, "--out", str(out)], run_id)
    seen = wait_for_records(proc, out / "trajectories.jsonl", at_least=2)
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    records, _ = read_records(out / "trajectories.jsonl")
    assert seen <= len(records) < 200
    assert len({(r.task_id, r.epoch) for r in records}) == len(records)
    assert f"{len(records)} of 200 episodes are recorded" in stderr
    hint = " ".join(stderr.split())
    assert "intercode-agents eval bash --model gold --tasks mini" in hint
    assert "--epochs 25" in hint and f"--out {out} --resume" in hint
    assert "Traceback" not in stderr
    assert containers_of_run(run_id) == []

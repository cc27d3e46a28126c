"""One writer per run directory: a second holder is refused by name, a killed holder's lock is taken over."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from intercode_agents.errors import ConfigError
from intercode_agents.runner.run_lock import LOCK_FILE, RunDirectoryBusy, RunLock
from tests import ROOT

HOLD = """
import sys, time
from pathlib import Path
from intercode_agents.runner.run_lock import RunLock
lock = RunLock(Path(sys.argv[1])).acquire()
print("held", flush=True)
time.sleep(600)
"""


def test_a_second_holder_is_refused_with_the_holders_pid(tmp_path: Path) -> None:
    directory = tmp_path / "run"
    with RunLock(directory) as first:
        assert first.taken_over is None
        holder = json.loads((directory / LOCK_FILE).read_text())
        assert holder["pid"] == os.getpid()
        with pytest.raises(
            RunDirectoryBusy, match=rf"being written by another process \(PID {os.getpid()} on "
        ):
            RunLock(directory).acquire()
    assert (directory / LOCK_FILE).read_text() == ""  # a clean release leaves no holder behind
    with RunLock(directory) as again:
        assert again.taken_over is None


def test_the_lock_of_a_sigkilled_process_is_taken_over(tmp_path: Path) -> None:
    directory = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(directory)], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        with pytest.raises(RunDirectoryBusy, match=f"PID {proc.pid} "):
            RunLock(directory).acquire()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        proc.stdout.close()
    assert json.loads((directory / LOCK_FILE).read_text())["pid"] == proc.pid  # the file outlives it
    started = time.monotonic()
    with RunLock(directory) as lock:
        assert time.monotonic() - started < 1  # no waiting for a timeout
        assert lock.taken_over is not None and lock.taken_over["pid"] == proc.pid
        assert f"PID {proc.pid} " in (lock.describe_taken_over() or "")


def test_a_path_that_cannot_be_a_run_directory_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match=r"cannot use .*file as a run directory"):
        RunLock(tmp_path / "file").acquire()

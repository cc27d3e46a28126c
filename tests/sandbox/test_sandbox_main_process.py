"""The verdict on a sandbox's main process (doomed: gone, dead, or holding a pending signal that will
end it), read from Python on the host and by the shell session's Bash builtins alike, on real
processes of this machine."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator

import pytest

from intercode_agents.sandbox.main_process import SHELL_CHECK, doomed


def _status(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8") as fh:
            return fh.read()
    except OSError:
        return ""


def _shell_verdict(pid: int) -> bool:
    script = f"set -eu; __ic_main={pid}\n{SHELL_CHECK}echo $__ic_doom"
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout == "1\n"


def _wait_state(pid: int, states: str) -> None:
    for _ in range(3000):
        line = next((x for x in _status(pid).splitlines() if x.startswith("State:")), "State:\t?")
        if line.split()[1] in states:
            return
        time.sleep(0.01)


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(["sleep", "60"])
    yield proc
    proc.kill()
    proc.wait()


def _both(pid: int) -> tuple[bool, bool]:
    return doomed(_status(pid)), _shell_verdict(pid)


def test_a_live_or_stopped_process_is_not_doomed(sleeper) -> None:
    assert _both(sleeper.pid) == (False, False)
    os.kill(sleeper.pid, signal.SIGSTOP)
    _wait_state(sleeper.pid, "T")
    assert _both(sleeper.pid) == (False, False)
    os.kill(sleeper.pid, signal.SIGCHLD)  # pending, but harmless by default
    assert _both(sleeper.pid) == (False, False)


def test_a_pending_fatal_signal_dooms_it_before_it_runs(sleeper) -> None:
    os.kill(sleeper.pid, signal.SIGSTOP)  # stopped: what is sent stays pending
    _wait_state(sleeper.pid, "T")
    os.kill(sleeper.pid, signal.SIGTERM)
    assert _both(sleeper.pid) == (True, True)


def _ignores(pid: int, sig: signal.Signals) -> bool:
    fields = dict(line.split(":", 1) for line in _status(pid).splitlines() if ":" in line)
    return bool(int(fields.get("SigIgn", "0").strip() or "0", 16) & (1 << (int(sig) - 1)))


def test_a_signal_the_process_ignores_does_not_doom_it() -> None:
    proc = subprocess.Popen(["bash", "-c", "trap '' TERM; exec sleep 60"])
    try:
        deadline = time.monotonic() + 30  # (a loaded machine may take its time to run the trap)
        while not _ignores(proc.pid, signal.SIGTERM) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _ignores(proc.pid, signal.SIGTERM)
        os.kill(proc.pid, signal.SIGSTOP)
        _wait_state(proc.pid, "T")
        os.kill(proc.pid, signal.SIGTERM)
        assert _both(proc.pid) == (False, False)
    finally:
        proc.kill()
        proc.wait()


def test_a_dead_or_gone_process_is_doomed(sleeper) -> None:
    os.kill(sleeper.pid, signal.SIGKILL)
    _wait_state(sleeper.pid, "ZX")
    assert _both(sleeper.pid) == (True, True)  # a zombie until it is reaped
    sleeper.wait()
    assert _both(sleeper.pid) == (True, True)  # gone

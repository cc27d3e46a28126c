"""One writer per run directory: ``run.lock``, held with ``flock`` by the process that writes the run.

A second ``eval`` on the same directory (a second ``--resume``, say) fails at once with a clear error
naming the holder, instead of playing the same episodes again. The kernel drops an ``flock`` when its
process dies, even by SIGKILL, so a lock is never stale in the kernel's eyes; the file only keeps the
holder's description (PID, host, start time, command), which is emptied on a clean release. A
non-empty file whose lock is free therefore means the last holder was killed: the next process takes
the lock over and says so (``RunLock.taken_over``).

``flock`` needs a local file system (or NFS v4 with its lock manager); a run directory on a file
system without working locks is not protected.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import socket
import sys
from pathlib import Path
from types import TracebackType
from typing import Any

from intercode_agents.errors import ConfigError

LOCK_FILE = "run.lock"


class RunDirectoryBusy(ConfigError):
    """Another process is writing this run directory."""


def _describe(holder: dict[str, Any]) -> str:
    command = " ".join(str(a) for a in holder.get("argv") or [])
    text = f"PID {holder.get('pid', '?')} on {holder.get('host', '?')}, since {holder.get('started_at', '?')}"
    return text + (f": {command}" if command else "")


class RunLock:
    """``with RunLock(directory):`` holds the directory's lock (creating the directory if needed)."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.path = self.directory / LOCK_FILE
        self.taken_over: dict[str, Any] | None = None  # the description left by a holder that died
        self._fd: int | None = None

    def acquire(self) -> RunLock:
        if self._fd is not None:
            raise ConfigError(f"the lock of {self.directory} is already held by this object")
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise ConfigError(
                f"cannot use {self.directory} as a run directory: {exc.strerror or exc}"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read(fd)
            os.close(fd)
            raise RunDirectoryBusy(
                f"the run directory {self.directory} is being written by another process "
                f"({_describe(holder) if holder else 'its holder did not describe itself'}). "
                "Wait for it to finish or stop it, or choose another --out."
            ) from None
        except BaseException:
            os.close(fd)
            raise
        self.taken_over = _read(fd) or None
        mine = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "argv": sys.argv,
        }
        _write(fd, json.dumps(mine).encode())
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            _write(fd, b"")  # a clean release leaves no holder behind
        finally:
            os.close(fd)  # closing drops the flock

    def describe_taken_over(self) -> str | None:
        return _describe(self.taken_over) if self.taken_over else None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


def _read(fd: int) -> dict[str, Any]:
    os.lseek(fd, 0, os.SEEK_SET)
    data = b""
    while chunk := os.read(fd, 65536):
        data += chunk
    if not data.strip():
        return {}
    try:
        holder = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return {"pid": "?", "note": "unreadable lock description"}
    return holder if isinstance(holder, dict) else {}


def _write(fd: int, data: bytes) -> None:
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, data)
    os.fsync(fd)

"""Output capture and deadlines for the Python REPL helper (stdlib only).

- ``Capture``: a text sink that keeps at most ``limit`` characters and counts the rest.
- ``FdForwarder``: points fds 1 and 2 at one pipe and forwards what arrives into the active
  ``Capture``. ``print`` output (through ``stream``), ``os.system``, subprocesses and C extensions
  all go through that pipe, so their output keeps its order.
- ``run_with_deadline``: runs a callable with SIGALRM raising ``ExecTimeout`` at the deadline.
- ``error_line``: the one-line text of an exception, as the last line of its traceback reads.
"""

from __future__ import annotations

import codecs
import io
import os
import secrets
import signal
import sys
import threading
import traceback
from collections.abc import Callable

# After the first alarm the timer keeps firing at this interval, so code that swallows the
# exception (a bare ``except:`` in a loop) is interrupted again.
_REFIRE_S = 0.05


class ExecTimeout(BaseException):
    """Raised inside user code at its deadline (a BaseException, so ``except Exception`` misses it)."""


class Capture:
    """Collects text up to ``limit`` characters; ``dropped`` counts the characters beyond it."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.dropped = 0
        self._parts: list[str] = []
        self._size = 0
        self._lock = threading.Lock()

    def write(self, text: str) -> None:
        with self._lock:
            room = self.limit - self._size
            kept = text[: max(room, 0)]
            if kept:
                self._parts.append(kept)
                self._size += len(kept)
            self.dropped += len(text) - len(kept)

    @property
    def truncated(self) -> bool:
        return self.dropped > 0

    def text(self) -> str:
        with self._lock:
            body = "".join(self._parts)
        if self.dropped:
            body += f"\n... [output truncated: {self.dropped} more characters not shown]"
        return body


class FdForwarder:
    """Owns fds 1 and 2: a reader thread forwards their bytes into the current sink."""

    def __init__(self) -> None:
        read_fd, write_fd = os.pipe()
        os.dup2(write_fd, 1)
        os.dup2(write_fd, 2)
        os.close(write_fd)
        self._read_fd = read_fd
        self.stream = io.TextIOWrapper(
            io.FileIO(1, "w", closefd=False), encoding="utf-8", errors="backslashreplace", write_through=True
        )
        self._token = b"\x00<intercode-sync-" + secrets.token_hex(8).encode() + b">\x00"
        self._sink: Capture | None = None
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._lock = threading.Lock()
        self._synced = threading.Event()
        threading.Thread(target=self._pump, name="fd-forwarder", daemon=True).start()

    def set_sink(self, sink: Capture | None) -> None:
        with self._lock:
            self._sink = sink

    def sync(self, timeout: float = 2.0) -> None:
        """Wait until everything written to fds 1/2 so far has reached the sink."""
        for stream in (self.stream, sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            try:
                if stream is not None:
                    stream.flush()
            except (OSError, ValueError, AttributeError):
                pass
        self._synced.clear()
        os.write(1, self._token)  # shorter than PIPE_BUF, so it arrives in one piece
        self._synced.wait(timeout)

    def _emit(self, data: bytes, final: bool = False) -> None:
        text = self._decoder.decode(data, final)
        with self._lock:
            if text and self._sink is not None:
                self._sink.write(text)

    def _pump(self) -> None:
        pending = b""
        keep = len(self._token) - 1
        while chunk := os.read(self._read_fd, 65536):
            pending += chunk
            while (at := pending.find(self._token)) >= 0:
                self._emit(pending[:at], final=True)
                pending = pending[at + len(self._token) :]
                self._synced.set()
            if len(pending) > keep:
                self._emit(pending[:-keep])
                pending = pending[-keep:]


def _on_alarm(signum: int, frame: object) -> None:
    signal.setitimer(signal.ITIMER_REAL, _REFIRE_S)
    raise ExecTimeout


def run_with_deadline(fn: Callable[[], None], timeout: float) -> ExecTimeout | None:
    """Run ``fn``; return the ``ExecTimeout`` that stopped it at the deadline (its traceback says
    where), or None when it finished. Other exceptions propagate."""
    signal.signal(signal.SIGALRM, _on_alarm)
    try:
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            fn()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except ExecTimeout as stopped:
        return stopped
    return None


def error_line(exc: BaseException) -> str:
    """``NameError: name 'f' is not defined``: the last line of the exception's traceback. The
    traceback is given, so a NameError or AttributeError carries Python's "Did you mean" hint."""
    lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
    return lines[-1].strip() if lines else type(exc).__name__

"""Command results and bounded output capture."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_OUTPUT_CAP = 1 << 20  # bytes kept per command (head + tail)


@dataclass(frozen=True)
class ExecResult:
    """The outcome of one command in a sandbox (a session step or a one-off exec).

    ``output`` is stdout and stderr interleaved as the process wrote them, decoded as UTF-8 with
    replacement characters. ``truncated`` says the command printed more than the capture cap and the
    middle was dropped (``output_bytes`` is the full count). ``restarted`` says a session could not be
    saved after a timeout and was started afresh (its state is gone).
    """

    output: str
    exit_code: int
    timed_out: bool = False
    truncated: bool = False
    duration_s: float = 0.0
    output_bytes: int = 0
    restarted: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


class OutputCapture:
    """Keeps the first and last ``cap // 2`` bytes of a stream, whatever its size.

    Memory stays bounded by ``cap`` however much a command prints; the dropped middle is replaced by
    a marker that says how many bytes were left out.
    """

    def __init__(self, cap: int = DEFAULT_OUTPUT_CAP) -> None:
        self.cap = max(cap, 2)
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self.cap // 2 - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if data:
            self._tail += data
            excess = len(self._tail) - self.cap // 2
            if excess > 0:
                del self._tail[:excess]

    @property
    def truncated(self) -> bool:
        return self.total > len(self._head) + len(self._tail)

    def text(self) -> str:
        head = self._head.decode("utf-8", errors="replace")
        tail = self._tail.decode("utf-8", errors="replace")
        if not self.truncated:
            return head + tail
        dropped = self.total - len(self._head) - len(self._tail)
        return f"{head}\n[... {dropped} bytes of output omitted ...]\n{tail}"

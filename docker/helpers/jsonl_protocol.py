"""JSON-lines plumbing shared by the in-container helpers (stdlib only).

A helper reads one JSON object per line on stdin and writes exactly one JSON object per line on
stdout. The protocol keeps private copies of the original stdin/stdout file descriptors; fd 0 is
pointed at /dev/null and fd 1 away from the protocol stream, so nothing a helper (or the code it
runs) prints can corrupt the stream.

With ``$INTERCODE_HELPER_SOCKET`` set, the helper also listens on a unix socket at that path and its
ready line names it ("socket"). Whichever comes first then carries the rest: a connection (the
harness reached the socket from the engine's host; the path is removed, and the helper exits at the
end of that connection's input) or a request line on stdin (it could not; the socket is closed).
"""

from __future__ import annotations

import json
import os
import select
import socket
import sys
from collections.abc import Callable
from typing import Any

Request = dict[str, Any]
Response = dict[str, Any]
Handler = Callable[[Request], Response]

MAX_TIMEOUT_S = 3600.0
SOCKET_ENV = "INTERCODE_HELPER_SOCKET"


class RequestError(Exception):
    """A request is malformed; the message is sent back as the response's error."""


class Channel:
    """The protocol stream: requests in, responses out, on private copies of fds 0 and 1."""

    def __init__(self, stray_output_fd: int = 2) -> None:
        self._in = os.fdopen(os.dup(0), "rb")
        self._out_fd = os.dup(1)
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.close(devnull)
        os.dup2(stray_output_fd, 1)
        sys.stdin = open(os.devnull, encoding="utf-8")
        self._conn: socket.socket | None = None
        self._listener: socket.socket | None = None
        self._path = os.environ.pop(SOCKET_ENV, "")  # (not handed down to what the helper runs)
        if self._path:
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                listener.bind(self._path)
                listener.listen(1)
                self._listener = listener
            except OSError:
                listener.close()

    def _choose(self) -> None:
        """Wait for the harness's connection or its first request on stdin; keep what came."""
        assert self._listener is not None
        readable, _, _ = select.select([self._listener, self._in], [], [])
        if self._listener in readable:
            self._conn, _ = self._listener.accept()
            self._in = self._conn.makefile("rb")
        self._listener.close()
        self._listener = None
        try:
            os.unlink(self._path)
        except OSError:
            pass

    def read_line(self) -> bytes | None:
        """The next request line, or None at end of input."""
        if self._listener is not None:
            self._choose()
        line = self._in.readline()
        return line if line else None

    def send(self, obj: Response) -> None:
        if self._listener is not None and obj.get("ready"):
            obj = {**obj, "socket": self._path}
        data = (json.dumps(obj, ensure_ascii=True, default=repr) + "\n").encode("ascii")
        if self._conn is not None:
            self._conn.sendall(data)
            return
        view = memoryview(data)
        while view:
            view = view[os.write(self._out_fd, view) :]


def parse_request(line: bytes) -> Request:
    try:
        req = json.loads(line.decode("utf-8", errors="replace"))
    except ValueError as exc:
        raise RequestError(f"bad JSON: {exc}") from None
    if not isinstance(req, dict):
        raise RequestError(f"a request must be a JSON object, got {type(req).__name__}")
    return req


def serve(channel: Channel, handlers: dict[str, Handler]) -> int:
    """Answer requests until stdin closes or an ``exit`` request comes (it gets no answer). Every
    other request gets exactly one response line."""
    while (line := channel.read_line()) is not None:
        if not line.strip():
            continue
        req_id: Any = None
        try:
            req = parse_request(line)
            if req.get("op") == "exit":
                return 0
            req_id = req.get("id")
            op = req.get("op")
            handler = handlers.get(op) if isinstance(op, str) else None
            if handler is None:
                known = ", ".join(sorted(handlers))
                raise RequestError(f"unknown op {op!r}; known ops: {known}")
            resp = handler(req)
        except RequestError as exc:
            resp = {"ok": False, "error": str(exc)}
        except Exception as exc:
            resp = {"ok": False, "error": f"internal helper error: {type(exc).__name__}: {exc}"}
        if req_id is not None:
            resp["id"] = req_id
        channel.send(resp)
    return 0


def get_str(req: Request, key: str) -> str:
    value = req.get(key)
    if not isinstance(value, str):
        raise RequestError(f"{req.get('op')!r} needs {key!r} as a string")
    return value


def get_timeout(req: Request, default: float) -> float:
    value = req.get("timeout", default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RequestError(f"'timeout' must be a number of seconds, got {value!r}")
    if not 0 < value <= MAX_TIMEOUT_S:
        raise RequestError(f"'timeout' must be in (0, {MAX_TIMEOUT_S:g}] seconds, got {value!r}")
    return float(value)


def get_positive_int(req: Request, key: str, default: int) -> int:
    value = req.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise RequestError(f"{key!r} must be a positive integer, got {value!r}")
    return value

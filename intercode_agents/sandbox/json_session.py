"""A JSON-lines helper process in a sandbox: one request line in, one response line out.

The in-container helpers (the Python REPL, the SQL client) keep their state between requests. A
helper enforces its own per-request timeouts; the transport adds a grace period and, past it, kills
and restarts the helper (its state is lost, and the response says ``"restarted": true``).

A session with ``host_socket=True`` asks its helper to also listen on a unix socket in the sandbox
and, where the sandbox's processes are this host's (the local engine's fast paths), takes its
requests and answers there instead of through the engine's stream
(:mod:`~intercode_agents.sandbox.host_sockets`: well under half the CPU a request costs). The
helper's stream stays open, its stray output read and dropped; when the socket cannot be reached,
the first request on the stream tells the helper to stay with it. Only helpers in sandboxes that run
no untrusted process use it (the SQL servers' helpers); the Python REPL, which runs an agent's code
in its own process, keeps the stream.

A session with ``raw=True`` never parses what the helper answers: the answer to request ``n`` is the
line that ends as the protocol ends it (``, "id": n}``), handed back as ``{"ok": true, "raw": line}``
for the caller to read where it likes. The Python scorer's runner answers with values the code under
test shapes, which the scorer reads in a process of its own rather than on the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from collections.abc import Sequence
from typing import Any

from intercode_agents.errors import CommandTimeout, SessionDied
from intercode_agents.sandbox.contract import HostUnreadable
from intercode_agents.sandbox.stream import ProcessStream, SessionHost

GOODBYE = b'{"op": "exit"}\n'  # the request that ends a helper (see docker/helpers/jsonl_protocol.py)
READY_LINE_LIMIT = 1 << 16  # a helper's ready line is short; a longer line before it is someone else's
SOCKET_ENV = "INTERCODE_HELPER_SOCKET"  # where a helper listens (see docker/helpers/jsonl_protocol.py)


def _parse(text: str) -> dict[str, Any] | None:
    """A response line as a JSON object, or None for anything else (bad JSON, a nesting bomb)."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


class JsonSession:
    def __init__(
        self,
        sandbox: SessionHost,
        argv: Sequence[str],
        *,
        user: str | None = None,
        workdir: str | None = None,
        env: dict[str, str] | None = None,
        ready_timeout: float = 60.0,
        grace: float = 5.0,
        max_line: int = 1 << 24,
        raw: bool = False,
        host_socket: bool = False,
    ) -> None:
        self._sandbox = sandbox
        self._argv = list(argv)
        self._user, self._workdir, self._env = user, workdir, env
        self.ready_timeout = ready_timeout
        self.grace = grace
        self.max_line = max_line
        self.raw = raw
        self.host_socket = host_socket
        self.starts = 0  # helper processes started: a change means the helper's state was lost
        self.ready_info: dict[str, Any] = {}
        self._proc: ProcessStream | None = None
        self._socket: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self._drainer: asyncio.Task[None] | None = None  # reads the stream while the socket serves
        self._lock = asyncio.Lock()
        self._next_id = 0
        self._stops = 0

    @property
    def pid(self) -> int:
        """The helper's PID inside the sandbox (0 when it is not running)."""
        return self._proc.pid if self._proc else 0

    @property
    def transport(self) -> str:
        """Where requests travel: ``"socket"`` (a unix socket from this host) or ``"stream"``."""
        return "socket" if self._socket is not None else "stream"

    async def start(self) -> JsonSession:
        self._stops = self._sandbox.stops
        env, path = self._env, None
        if self.host_socket and self._sandbox.host_access is not None:
            path = f"/tmp/.intercode-helper-{secrets.token_hex(8)}.sock"
            env = {**(env or {}), SOCKET_ENV: path}
        proc = await self._sandbox.start_process(
            self._argv, user=self._user, workdir=self._workdir, env=env, goodbye=GOODBYE
        )
        self._proc = proc
        self.starts += 1
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.ready_timeout
        while True:  # (a left-over writer's lines may come first)
            line = await proc.read_line(max(deadline - loop.time(), 0.001), self.max_line)
            info = _parse(line) if len(line) <= READY_LINE_LIMIT else None
            if info is not None and "ready" in info:
                break
            if loop.time() >= deadline:
                raise TimeoutError  # (endless lines that never say ready)
        self.ready_info = info
        if not self.ready_info.get("ready"):
            raise SessionDied(f"helper {self._argv[0]} failed to start: {self.ready_info.get('error', line)}")
        if path is not None and info.get("socket") == path:
            await self._connect(proc, path)
        return self

    async def _connect(self, proc: ProcessStream, path: str) -> None:
        """Take the helper's requests to its socket when this host reaches it (else the stream)."""
        host = self._sandbox.host_access
        try:
            sock = host.connect_unix(proc.pid, path) if host is not None else None
        except HostUnreadable:
            sock = None
        if sock is None:
            return
        self._socket = await asyncio.open_unix_connection(sock=sock, limit=self.max_line + 1)
        self._drainer = asyncio.ensure_future(_drain(proc))

    async def _send(self, data: bytes) -> None:
        if self._socket is None:
            assert self._proc is not None
            await self._proc.write(data)
            return
        writer = self._socket[1]
        try:
            writer.write(data)
            await writer.drain()
        except (ConnectionError, OSError) as exc:
            raise SessionDied(f"the helper's socket closed: {exc}") from exc

    async def _read_line(self, timeout: float) -> str:
        if self._socket is None:
            assert self._proc is not None
            return await self._proc.read_line(timeout, self.max_line)
        try:
            async with asyncio.timeout(timeout):
                line = await self._socket[0].readline()
        except (ValueError, asyncio.LimitOverrunError) as exc:
            raise SessionDied(f"a line of output exceeded {self.max_line} bytes") from exc
        except (ConnectionError, OSError) as exc:
            raise SessionDied(f"the helper's socket closed: {exc}") from exc
        if not line.endswith(b"\n"):
            raise SessionDied("the helper exited")
        return line[:-1].decode("utf-8", errors="replace")

    async def request(self, payload: dict[str, Any], timeout: float = 30.0) -> dict[str, Any]:
        """Send one request; wait up to ``timeout`` + grace for its response."""
        try:
            return await self._request(payload, timeout)
        finally:
            await self._sandbox.after_command()

    async def _request(self, payload: dict[str, Any], timeout: float) -> dict[str, Any]:
        async with self._lock:
            if self._proc is None or self._proc.eof or self._stops != self._sandbox.stops:
                await self._restart()  # (the harness stopped every process since the last request)
            assert self._proc is not None
            self._next_id += 1
            body = {**payload, "id": self._next_id}
            line = json.dumps(body)  # ASCII: a lone surrogate travels as an escape, never raises
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout + self.grace
            try:
                await self._send(line.encode("ascii") + b"\n")
                ending = f', "id": {self._next_id}}}'
                while True:
                    text = await self._read_line(max(deadline - loop.time(), 0.001))
                    # Lines that are not this request's answer (what code run by the helper wrote to
                    # its output, say) are skipped; the deadline bounds the wait whatever comes.
                    if self.raw:
                        if text.endswith(ending):
                            return {"ok": True, "raw": text}
                    elif (response := _parse(text)) is not None and response.get("id") == self._next_id:
                        return response
                    if loop.time() >= deadline:
                        raise TimeoutError  # (a writer whose lines never stop coming)
            except TimeoutError:
                await self._restart()
                return {
                    "ok": False,
                    "timed_out": True,
                    "restarted": True,
                    "error": f"no answer within {timeout + self.grace:g}s; the helper was restarted",
                }
            except SessionDied as exc:
                await self._restart()
                return {
                    "ok": False,
                    "restarted": True,
                    "error": f"the helper failed ({exc}); it was restarted",
                }

    async def _restart(self) -> None:
        await self.close()
        try:
            await self.start()
        except TimeoutError as exc:
            raise CommandTimeout(f"helper {self._argv[0]} did not become ready") from exc

    async def close(self) -> None:
        proc, self._proc = self._proc, None
        drainer, self._drainer = self._drainer, None
        if drainer is not None:
            drainer.cancel()
            with contextlib.suppress(BaseException):
                await drainer
        connection, self._socket = self._socket, None
        if connection is not None:
            connection[1].close()  # (an idle helper exits at the end of its socket's input)
        if proc is not None:
            await self._sandbox.end_process(proc, busy=self._lock.locked())


async def _drain(proc: ProcessStream) -> None:
    """Read and drop what a helper served through its socket writes on its stream (stray output),
    so that the stream never fills up and blocks it; the stream's end marks the helper gone."""
    with contextlib.suppress(SessionDied):
        while await proc.read(None) is not None:
            pass

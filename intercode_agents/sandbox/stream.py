"""A long-lived process inside a sandbox, over a backend's byte stream (stdin in, stdout out).

The process is started through ``sh -c 'echo $$; exec "$@"'`` so that its first line of output is
its PID inside the sandbox: that is what timeouts signal. No TCP port is involved: bytes travel over
the backend's exec stream (for Docker, the Engine API's hijacked exec connection).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from intercode_agents.errors import SessionDied

if TYPE_CHECKING:
    from intercode_agents.sandbox.contract import Backend, Channel, HostAccess

PID_PREAMBLE = ("/bin/sh", "-c", 'echo "$$"; exec "$@"', "sh")


class ProcessStream:
    """One process in a sandbox with its stdin/stdout (and stderr) over a backend's :class:`Channel`."""

    def __init__(
        self,
        backend: Backend,
        sandbox_id: str,
        argv: Sequence[str],
        *,
        user: str | None = None,
        workdir: str | None = None,
        env: dict[str, str] | None = None,
        stdin: bool = True,
    ) -> None:
        self._backend = backend
        self._sandbox_id = sandbox_id
        self._argv = [*PID_PREAMBLE, *argv]
        self._user = user
        self._workdir = workdir
        self._env = env
        self._stdin = stdin
        self._channel: Channel | None = None
        self._pending = bytearray()  # stdout bytes read but not yet consumed
        self.stderr_tail = bytearray()
        self.pid = 0
        self.eof = False

    async def start(self, timeout: float = 30.0) -> int:
        """Start the process and return its PID inside the container."""
        self._channel = await self._backend.exec(
            self._sandbox_id,
            self._argv,
            user=self._user,
            workdir=self._workdir,
            env=self._env,
            stdin=self._stdin,
        )
        return await self.read_pid(timeout)

    async def attach(self) -> None:
        """Attach to the sandbox's main process instead (before it starts, so that no output is
        missed); its argv is the sandbox's command, and :meth:`read_pid` follows."""
        self._channel = await self._backend.attach(self._sandbox_id)

    async def read_pid(self, timeout: float = 30.0) -> int:
        """Read the PID the preamble prints first."""
        line = await self.read_line(timeout)
        try:
            self.pid = int(line.strip())
        except ValueError as exc:
            raise SessionDied(f"process did not start cleanly: {line[:200]!r}") from exc
        return self.pid

    async def write(self, data: bytes) -> None:
        if self._channel is None or self.eof:
            raise SessionDied("the process has exited")
        try:
            await self._channel.write(data)
        except SessionDied:
            self.eof = True
            raise

    async def read(self, timeout: float | None) -> bytes | None:
        """Next chunk of stdout (None at EOF). Raises TimeoutError when nothing came in time."""
        if self._pending:
            data = bytes(self._pending)
            self._pending.clear()
            return data
        assert self._channel is not None
        while True:
            if self.eof:
                return None
            async with asyncio.timeout(timeout):
                msg = await self._channel.read()
            if msg is None:
                self.eof = True
                return None
            stream, data = msg
            if stream == 2:
                self.stderr_tail += data
                del self.stderr_tail[:-4096]
                continue
            return data

    def unread(self, data: bytes) -> None:
        self._pending[:0] = data

    async def read_line(self, timeout: float, limit: int = 1 << 24) -> str:
        """Read one newline-terminated line of stdout (bounded by ``limit`` bytes). Linear in what
        was read, however the lines fall into chunks (a chunk of a thousand empty lines costs no more
        than one line of a thousand bytes)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        buf = bytearray()
        while True:
            nl = self._pending.find(b"\n")
            if nl >= 0:
                buf += self._pending[:nl]
                del self._pending[: nl + 1]  # (a bytearray drops its head without moving its tail)
                return buf.decode("utf-8", errors="replace")
            buf += self._pending
            self._pending.clear()
            if len(buf) > limit:
                raise SessionDied(f"a line of output exceeded {limit} bytes")
            if buf and loop.time() >= deadline:
                raise TimeoutError  # (output that keeps coming without a newline)
            chunk = await self.read(max(deadline - loop.time(), 0.001))
            if chunk is None:
                tail = self.stderr_tail.decode("utf-8", errors="replace").strip()
                raise SessionDied("the process exited" + (f": {tail[-500:]}" if tail else ""))
            self._pending += chunk

    async def exit_code(self) -> int | None:
        return None if self._channel is None else await self._channel.exit_code()

    async def end(self, grace: float) -> bool:
        """Close the process's stdin and wait up to ``grace`` seconds for it to exit (its stdout to
        end); True when it did. The helpers and the bash loop exit at the end of their input."""
        if self.eof:
            return True
        if self._channel is None or not self._channel.close_input():
            return False
        return await self.drain(grace)

    async def drain(self, timeout: float) -> bool:
        """Read (and drop) output until the process's output ends; False if it did not in time."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        try:
            while await self.read(max(deadline - loop.time(), 0.001)) is not None:
                if loop.time() >= deadline:
                    return False  # (a process that never stops writing)
        except TimeoutError:
            return False
        return True

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close()
        self.eof = True


class SessionHost(Protocol):
    """What a session (:class:`~intercode_agents.sandbox.shell.ShellSession`,
    :class:`~intercode_agents.sandbox.json_session.JsonSession`) needs of the sandbox it runs in: a
    :class:`~intercode_agents.sandbox.Sandbox` is one, and sessions know it only as this."""

    @property
    def stops(self) -> int:
        """How many times the harness stopped every process in the sandbox (a session restarts)."""
        ...

    async def start_process(
        self,
        argv: Sequence[str],
        *,
        user: str | None = None,
        workdir: str | None = None,
        env: dict[str, str] | None = None,
        goodbye: bytes,
        one_off: bool = False,
    ) -> ProcessStream:
        """Start the session's process (``goodbye``: the input that makes it exit)."""
        ...

    @property
    def host_access(self) -> HostAccess | None:
        """The sandbox's fast paths from the engine's host (None: it has none)."""
        ...

    @property
    def main_pid(self) -> int | None:
        """The PID of the process whose death stops the container, when known."""
        ...

    async def after_command(self, *, main_doomed: bool = False) -> None:
        """Called as each command or request ends (``main_doomed``: the session saw the main process
        doomed)."""
        ...

    async def signal_tree(self, pid: int, sig: str, *, include_root: bool, since: str | None = None) -> None:
        """Signal what the process ``pid`` started (see :meth:`Sandbox.signal_tree`)."""
        ...

    async def kill_process(self, proc: ProcessStream, *, since: str | None = None) -> None:
        """Kill the session's process tree and wait until its output ends."""
        ...

    async def end_process(self, proc: ProcessStream, *, busy: bool) -> None:
        """Stop the session's process: ask an idle one to exit, kill a busy one."""
        ...

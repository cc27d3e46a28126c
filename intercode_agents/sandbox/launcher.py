"""Session processes started without a docker exec each.

A docker exec costs about 40 ms of CPU on a 2-core machine (dockerd, containerd and runc all take
part), and every episode starts at least one session. So each sandbox keeps a *launcher*: a bash,
never given to anybody, that reads NUL-terminated commands from its stream and runs each in the
foreground. It is the container's main process (attached to before the container starts) when the
image's command only idles, else one docker exec starts it. A program started that way inherits the
stream: it reads its input from it and writes its output to it until it exits, and then the launcher
prints a marker and waits for the next command. Starting a session costs a fork and an exec of its
program inside the container.

The launcher's environment, working directory, limits and signal dispositions are those a docker
exec would give, and nothing an agent does runs in it: a session is its child, never itself. Commands
carry a secret token, so bytes an agent manages to push into the shared stream are not run by the
launcher. The launcher lends its stream to one process at a time; a second one, or one for another
user, starts by docker exec.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING

from intercode_agents.errors import SessionDied
from intercode_agents.sandbox.stream import PID_PREAMBLE, ProcessStream

if TYPE_CHECKING:
    from intercode_agents.sandbox.contract import Backend

_RC = re.compile(rb"-?\d*\x1e?")
MAIN_COMMAND = ["bash", "--noprofile", "--norc", "-s"]  # also the container's command when it runs one


def _script(token: str, nonce: str, *, announce_pid: bool) -> bytes:
    marker = f"\\036\\036{nonce}:%d\\036\\n"
    return (
        ("printf '%s\\n' \"$$\"\n" if announce_pid else "") + "unset HISTFILE\n"
        f"__ic_token='{token} '\n"
        f"printf '{marker}' -1\n"
        "while IFS= read -r -d '' __ic_cmd; do\n"
        '  case $__ic_cmd in "$__ic_token"*) ;; *) continue ;; esac\n'
        '  eval "${__ic_cmd#"$__ic_token"}"\n'
        f"  printf '{marker}' \"$?\"\n"
        "done\n"
    ).encode()


def spawn_line(
    argv: Sequence[str],
    workdir: str | None,
    env: dict[str, str] | None,
    *,
    one_off: bool = False,
    preamble: Sequence[str] = PID_PREAMBLE,
) -> str:
    """The launcher command that runs ``argv`` as a docker exec would (fresh SHLVL, the workdir and
    extra environment applied) and prints its PID first (through ``preamble``). A ``one_off``
    command gets /dev/null as its input and its errors in its output, as :meth:`Sandbox.exec`
    promises."""
    words = [*preamble, *argv]
    if env:
        words = ["env", *(f"{k}={v}" for k, v in env.items()), *words]
    cd = f"cd -- {shlex.quote(workdir)} || exit 126; " if workdir else ""
    redirect = " </dev/null 2>&1" if one_off else ""
    return f"( unset SHLVL OLDPWD; {cd}exec {shlex.join(words)}{redirect} )"


class Launcher:
    """The launcher bash of one sandbox (see the module docstring)."""

    def __init__(self, backend: Backend, sandbox_id: str) -> None:
        self._backend = backend
        self._sandbox_id = sandbox_id
        self._token = secrets.token_hex(16)
        nonce = secrets.token_hex(8)
        self.prefix = b"\x1e\x1e" + nonce.encode() + b":"
        self._marker = re.compile(re.escape(self.prefix) + rb"(-?\d+)\x1e\n")
        # A spawned process announces its PID in a frame of the launcher's own, so that what a
        # left-over process of an earlier one still writes into the shared stream is skipped.
        self._pid_frame = re.compile(re.escape(self.prefix) + rb"pid:(\d+)\x1e\n")
        self._preamble = (
            "/bin/sh",
            "-c",
            f'printf \'\\036\\036{nonce}:pid:%s\\036\\n\' "$$"; exec "$@"',
            "sh",
        )
        self._nonce = nonce
        self.stream: ProcessStream | None = None
        self._lent: LaunchedProcess | None = None
        self.main = False  # it is the container's main process (started on the attached stream)

    @property
    def alive(self) -> bool:
        return self.stream is not None and not self.stream.eof

    @property
    def idle(self) -> bool:
        return self.alive and self._lent is None

    async def start(self, attached: ProcessStream | None = None, timeout: float = 30.0) -> Launcher:
        """Start the launcher by docker exec, or on ``attached``: the container's main process
        (running :data:`MAIN_COMMAND`), attached before the container started."""
        stream = attached or ProcessStream(self._backend, self._sandbox_id, MAIN_COMMAND)
        if attached is None:
            await stream.start(timeout)
        self.stream = stream
        self.main = attached is not None
        await stream.write(_script(self._token, self._nonce, announce_pid=attached is not None))
        if attached is not None:
            await stream.read_pid(timeout)
        child = LaunchedProcess(self, b"")
        self._lent = child
        # The launcher's first marker says it is ready.
        if not await child.drain(timeout) or child.exit_status != -1:
            raise SessionDied("the launcher shell did not start")
        return self

    @classmethod
    async def start_if_possible(cls, backend: Backend, sandbox_id: str) -> Launcher | None:
        """A running launcher, or None when the image cannot run one (no bash): sessions then start
        by docker exec."""
        launcher = cls(backend, sandbox_id)
        try:
            return await launcher.start()
        except SessionDied:
            await launcher.close()
            return None

    async def spawn(
        self,
        argv: Sequence[str],
        *,
        workdir: str | None,
        env: dict[str, str] | None,
        goodbye: bytes,
        one_off: bool = False,
        timeout: float = 30.0,
    ) -> LaunchedProcess:
        """Start ``argv`` on the launcher's stream; ``goodbye`` is what makes the program exit."""
        assert self.stream is not None and self.idle
        child = LaunchedProcess(self, goodbye)
        self._lent = child
        command = spawn_line(argv, workdir, env, one_off=one_off, preamble=self._preamble)
        line = f"{self._token} {command}"
        await self.stream.write(line.encode("utf-8", errors="surrogateescape") + b"\x00")
        try:
            child.pid = await self._read_pid(child, timeout)
        except (ValueError, SessionDied, TimeoutError) as exc:
            await child.drain(2.0)  # the launcher's marker: the stream is its own again
            await child.close()
            raise SessionDied(f"process did not start: {exc}") from exc
        return child

    async def _read_pid(self, child: LaunchedProcess, timeout: float) -> int:
        """Read up to ``child``'s PID frame; bytes before it are a left-over process's, dropped."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        buf = bytearray()
        while True:
            m = self._pid_frame.search(buf)
            if m:
                child.unread(bytes(buf[m.end() :]))
                return int(m.group(1))
            del buf[: max(0, len(buf) - len(self.prefix) - 32)]  # keep what may be a frame's start
            chunk = await child.read(max(deadline - loop.time(), 0.001))
            if chunk is None:
                raise SessionDied("the process exited before it started")
            buf += chunk

    def find_marker(self, data: bytes) -> re.Match[bytes] | None:
        return self._marker.search(data)

    def partial_marker(self, data: bytes) -> int:
        """How many trailing bytes of ``data`` could be the start of a marker (kept back for now)."""
        i = data.find(b"\x1e", max(0, len(data) - len(self.prefix) - 16))
        while i != -1:
            tail = data[i:]
            if self.prefix.startswith(tail) or (
                tail.startswith(self.prefix) and _RC.fullmatch(tail[len(self.prefix) :])
            ):
                return len(data) - i
            i = data.find(b"\x1e", i + 1)
        return 0

    def returned(self, child: LaunchedProcess, rest: bytes) -> None:
        """``child`` exited and the launcher printed its marker: the stream is the launcher's again."""
        if self._lent is child:
            self._lent = None
        if rest and self.stream is not None:
            self.stream.unread(rest)

    async def close(self) -> None:
        stream, self.stream, self._lent = self.stream, None, None
        if stream is not None:
            await stream.close()


class LaunchedProcess(ProcessStream):
    """A program the launcher runs in the foreground: the launcher's stream, lent until it exits.

    Its end of output is the launcher's marker, which also carries its exit status.
    """

    def __init__(self, launcher: Launcher, goodbye: bytes) -> None:
        assert launcher.stream is not None
        self._launcher = launcher
        self._via = launcher.stream
        self._goodbye = goodbye
        self._pending = bytearray()
        self._held = bytearray()  # bytes that may be the start of the launcher's marker
        self.stderr_tail = self._via.stderr_tail
        self.exit_status: int | None = None
        self.pid = 0
        self.eof = False

    async def start(self, timeout: float = 30.0) -> int:
        raise SessionDied("a launched process is started by its launcher")

    async def write(self, data: bytes) -> None:
        if self.eof:
            raise SessionDied("the process has exited")
        await self._via.write(data)

    async def read(self, timeout: float | None) -> bytes | None:
        if self._pending:
            data = bytes(self._pending)
            self._pending.clear()
            return data
        while not self.eof:
            chunk = await self._via.read(timeout)
            if chunk is None:  # the launcher itself is gone
                self.eof = True
                self._launcher.returned(self, b"")
                return bytes(self._held) or None
            data = bytes(self._held) + chunk
            self._held.clear()
            m = self._launcher.find_marker(data)
            if m:
                self.eof = True
                self.exit_status = int(m.group(1))
                self._launcher.returned(self, data[m.end() :])
                return data[: m.start()] or None
            keep = self._launcher.partial_marker(data)
            self._held += data[len(data) - keep :]
            if len(data) > keep:
                return data[: len(data) - keep]
        return None

    async def end(self, grace: float) -> bool:
        if self.eof:
            return True
        try:
            await self.write(self._goodbye)
        except SessionDied:
            return False
        return await self.drain(grace)

    async def exit_code(self) -> int | None:
        return self.exit_status

    async def close(self) -> None:
        """Let go of the stream. Still running (nobody waited for it to exit), the process keeps
        the launcher's stream, so the launcher is lost."""
        if not self.eof:
            await self._launcher.close()
        self.eof = True

"""A persistent bash session with a sentinel protocol.

The session is ``bash --noprofile --norc -s`` reading its script from the exec stream. The script is a
loop that reads one NUL-terminated command, ``eval``s it in the shell itself (so ``cd``, variables and
functions persist) with stdin from /dev/null, waits for the background jobs it started (their output
belongs to the command, as it does under ``docker exec``; ``disown`` opts out), and prints a marker
carrying a per-session nonce and the command's ``$?``. Commands therefore cannot contain NUL bytes,
and they are sent exactly as written.

On a deadline the command's process tree is sent SIGINT, then SIGKILL; if the marker still does not
come (a busy loop in the shell itself) the session is restarted and the result says so.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import time
from collections.abc import Awaitable, Callable

from intercode_agents.errors import InvalidAction, SessionDied
from intercode_agents.sandbox.main_process import SHELL_CHECK
from intercode_agents.sandbox.result import DEFAULT_OUTPUT_CAP, ExecResult, OutputCapture
from intercode_agents.sandbox.stream import ProcessStream, SessionHost

# A command printing more than this is stopped (its output is already truncated to the cap).
DEFAULT_FLOOD_LIMIT = 64 << 20
RESTART_NOTE = "\n[the shell session was restarted after the timeout: its state (cwd, variables) was lost]"
# Seconds between kills and new tries when the restarted shell cannot start (its process table full).
RESTART_WAITS = (0.1, 0.3, 0.6, 1.0, 1.5, 2.0)


def encode_command(text: str) -> bytes:
    """UTF-8 bytes of ``text``; surrogate escapes (``\\udc80``-``\\udcff``, Python's way to carry raw
    bytes in a string) become those bytes, and any other lone surrogate is an InvalidAction."""
    try:
        return text.encode("utf-8", errors="surrogateescape")
    except UnicodeEncodeError as exc:
        bad = text[exc.start : exc.end]
        raise InvalidAction(
            f"the command holds text that is not valid Unicode ({bad!r} at {exc.start})"
        ) from None


def _loop_script(nonce: str, main_pid: int | None) -> bytes:
    marker = f"\\036\\036{nonce}:%d\\036\\n"
    # As a command ends: its status, and 1 when the container's main process is doomed.
    end = f"\\036\\036{nonce}:%d:%d\\036\\n"
    # As a command starts: the container's uptime and the PIDs alive (what a timeout must spare).
    start = f"\\036\\036{nonce}:t0:%s:%s\\036\\n"
    return (
        "exec 2>&1\n"
        "unset HISTFILE\n"
        f"__ic_main={main_pid or 0}\n"
        f"printf '{marker}' -1\n"
        "while IFS= read -r -d '' __ic_cmd; do\n"
        "  read -r __ic_t0 _ < /proc/uptime; __ic_ps=(/proc/[0-9]*)\n"
        f'  printf \'{start}\' "$__ic_t0" "${{__ic_ps[*]#/proc/}}"\n'
        '  eval "$__ic_cmd" </dev/null\n'
        "  __ic_rc=$?\n"
        "  wait\n"  # background jobs hold the output open, as under `docker exec`
        f"{SHELL_CHECK}"
        f'  printf \'{end}\' "$__ic_rc" "$__ic_doom"\n'
        "done\n"
    ).encode()


class ShellSession:
    """A live bash inside a sandbox. Use :meth:`run`; one command at a time (calls queue up)."""

    def __init__(
        self,
        sandbox: SessionHost,
        *,
        user: str | None = None,
        workdir: str | None = None,
        env: dict[str, str] | None = None,
        output_cap: int = DEFAULT_OUTPUT_CAP,
        flood_limit: int = DEFAULT_FLOOD_LIMIT,
    ) -> None:
        self._sandbox = sandbox
        self._user, self._workdir, self._env = user, workdir, env
        self.output_cap = output_cap
        self.flood_limit = flood_limit
        self._lock = asyncio.Lock()
        self._proc: ProcessStream | None = None
        self._marker_re: re.Pattern[bytes] = re.compile(b"")
        self._start_re: re.Pattern[bytes] = re.compile(b"")
        self._stops = 0
        self._prefix = b""
        self._main_doomed = False  # the last command's end marker said the main process is doomed

    @property
    def pid(self) -> int:
        return self._proc.pid if self._proc else 0

    async def start(self) -> ShellSession:
        self._stops = self._sandbox.stops
        nonce = secrets.token_hex(8)
        self._prefix = b"\x1e\x1e" + nonce.encode() + b":"
        self._marker_re = re.compile(re.escape(self._prefix) + rb"(-?\d+)(?::([01]))?\x1e\n")
        self._start_re = re.compile(re.escape(self._prefix) + rb"t0:(\d+)\.(\d\d):([\d ]*)\x1e\n")
        proc = await self._sandbox.start_process(
            ["bash", "--noprofile", "--norc", "-s"],
            user=self._user,
            workdir=self._workdir,
            env=self._env,
            goodbye=b"exit 0\x00",
        )
        await proc.write(_loop_script(nonce, self._sandbox.main_pid))
        self._proc = proc
        ready = await self._read_result(time.perf_counter(), 30.0, interruptible=False)
        if ready.exit_code != -1:
            raise SessionDied(f"bash session failed to start: {ready.output[:300]!r}")
        return self

    async def run(self, command: str, timeout: float = 30.0) -> ExecResult:
        """Run ``command`` as written; return its interleaved output and exit code."""
        if "\x00" in command:
            raise InvalidAction("a shell command cannot contain a NUL byte")
        data = encode_command(command)
        self._main_doomed = False
        async with self._lock:
            if self._proc is None or self._proc.eof or self._stops != self._sandbox.stops:
                await self._restart()  # (the harness stopped every process since the last command)
            assert self._proc is not None
            started = time.perf_counter()
            try:
                await self._proc.write(data + b"\x00")
                result = await self._read_result(started, timeout, interruptible=True)
            except SessionDied as exc:
                # `exit` or a killed shell: answer with what we have and come back fresh next time.
                await self._restart()
                result = ExecResult(
                    output=f"[the shell exited ({exc}); a new session was started]",
                    exit_code=-1,
                    duration_s=time.perf_counter() - started,
                    restarted=True,
                )
        await self._sandbox.after_command(main_doomed=self._main_doomed)
        return result

    async def _read_result(self, started: float, timeout: float, *, interruptible: bool) -> ExecResult:
        assert self._proc is not None
        proc = self._proc
        loop = asyncio.get_running_loop()
        capture = OutputCapture(self.output_cap)
        window = bytearray()
        keep = len(self._prefix) + 24
        deadline = loop.time() + timeout
        timed_out = False
        began: list[str] = []  # "uptime-centiseconds:pid,pid,..." when the command started
        escalation: list[Callable[[], Awaitable[None]]] = [
            lambda: self._signal("INT", began[0] if began else None),
            lambda: self._signal("KILL", began[0] if began else None),
        ]
        while True:
            if not began and (start := self._start_re.search(window)):
                alive = ",".join(start.group(3).decode().split())
                began.append(f"{int(start.group(1) + start.group(2))}:{alive}")
                del window[start.start() : start.end()]
            m = self._marker_re.search(window)
            if m:
                self._main_doomed = m.group(2) == b"1"
                capture.feed(bytes(window[: m.start()]))
                proc.unread(bytes(window[m.end() :]))
                if len(escalation) < 2 and began:
                    # Stopped by us: what the command started away from its tree goes as well.
                    await self._signal("KILL", began[0])
                return ExecResult(
                    output=capture.text(),
                    exit_code=int(m.group(1)),
                    timed_out=timed_out,
                    truncated=capture.truncated,
                    duration_s=time.perf_counter() - started,
                    output_bytes=capture.total,
                )
            if len(window) > keep:
                capture.feed(bytes(window[:-keep]))
                del window[:-keep]
            flooding = interruptible and capture.total > self.flood_limit and escalation
            remaining = deadline - loop.time()
            if (remaining <= 0 or flooding) and interruptible:
                if not escalation:
                    return await self._give_up(capture, started, began[0] if began else None)
                timed_out = timed_out or remaining <= 0
                await escalation.pop(0)()
                deadline = loop.time() + (1.0 if escalation else 2.0)
                continue
            try:
                chunk = await proc.read(max(remaining, 0.001))
            except TimeoutError:
                if not interruptible:
                    raise SessionDied("the shell did not answer in time") from None
                continue
            if chunk is None:
                raise SessionDied("the shell process exited")
            window += chunk

    async def _signal(self, sig: str, since: str | None) -> None:
        """Signal every process the running command started (``since``: when it began and what was
        alive then, see :meth:`Sandbox.signal_tree`; unknown, the shell's tree), never the shell."""
        await self._sandbox.signal_tree(self.pid, sig, include_root=False, since=since)

    async def _give_up(self, capture: OutputCapture, started: float, began: str | None) -> ExecResult:
        await self._restart(began)
        return ExecResult(
            output=capture.text() + RESTART_NOTE,
            exit_code=-1,
            timed_out=True,
            truncated=capture.truncated,
            duration_s=time.perf_counter() - started,
            output_bytes=capture.total,
            restarted=True,
        )

    async def _restart(self, since: str | None = None) -> None:
        old, self._proc = self._proc, None
        if old is not None:
            if old.pid and not old.eof:
                await self._sandbox.kill_process(old, since=since)
            await old.close()
        for wait in RESTART_WAITS:
            try:
                await self.start()
                return
            except SessionDied:
                if old is None or not old.pid or since is None:
                    raise
            # What the command started may refill the process table faster than one pass kills it
            # (a fork bomb under the pids limit keeps the new shell from starting): kill again.
            await self._sandbox.signal_tree(old.pid, "KILL", include_root=True, since=since)
            await asyncio.sleep(wait)
        await self.start()

    async def close(self) -> None:
        """End the session: an idle shell exits at the end of its input; a busy one (or one whose
        background jobs hold its output) has its process tree killed."""
        proc, self._proc = self._proc, None
        if proc is not None:
            await self._sandbox.end_process(proc, busy=self._lock.locked())

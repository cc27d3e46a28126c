"""Inspect's ``exec``, ``read_file`` and ``write_file`` over one of our sandboxes.

Inspect's sandbox API differs from our own one-off command (:meth:`Sandbox.exec
<intercode_agents.sandbox.Sandbox.exec>`) in four ways, so this module runs the process through the
backend contract itself (:meth:`Backend.exec <intercode_agents.sandbox.contract.Backend.exec>`):

- stdout and stderr come back apart, and stdin takes input (up to Inspect's own tests' 50 MiB);
- a timeout raises :class:`TimeoutError` after everything the command started is killed (the same
  kill our sessions use: every process started since the command began, a ``setsid`` or background
  child included);
- each stream is capped at Inspect's ``MAX_EXEC_OUTPUT_SIZE`` (read when called), past which the
  process is killed and :class:`OutputLimitExceededError` raised;
- a program that cannot be executed is a :class:`PermissionError`, a program that is missing a
  failed result (exit 127), a death by signal ``128 + signal`` (the engine's own exit status).

Files travel through the engine (``put_archive``/``get_archive``), never through programs in the
sandbox, so a reader (a scorer, say) cannot be fooled by an agent that replaced ``cat``: the price is
that permission bits are not applied (the engine reads and writes as root), which Inspect's
self-check notices (docs/INTEROP.md lists the checks that do not apply).
"""

from __future__ import annotations

import asyncio
import errno
import io
import posixpath
import tarfile
from collections.abc import Sequence

from inspect_ai.util import ExecResult, OutputLimitExceededError, SandboxEnvironmentLimits

from intercode_agents.sandbox import Sandbox
from intercode_agents.sandbox.archives import one_file
from intercode_agents.sandbox.stream import PID_PREAMBLE

_CHUNK = 1 << 16
_EXIT_WAIT_S = 5.0  # the engine may report the exit status a moment after the streams end
_KILL_WAIT_S = 5.0  # how long the streams may go on after a kill before we let go of them
_SYMLINK_HOPS = 40


class _Output:
    """One stream's bytes, within Inspect's limit."""

    def __init__(self, limit: int) -> None:
        self.data = bytearray()
        self.limit = limit

    def feed(self, chunk: bytes) -> bool:
        """Add ``chunk``; False once the limit is passed (the data kept is the limit's worth)."""
        room = self.limit - len(self.data)
        self.data += chunk[: max(room, 0)]
        return len(chunk) <= room


async def exec_process(
    sb: Sandbox,
    argv: Sequence[str],
    *,
    input: str | bytes | None = None,
    cwd: str | None = None,
    env: dict[str, str] | None = None,
    user: str | None = None,
    timeout: float | None = None,
) -> ExecResult[str]:
    """Run ``argv`` in ``sb`` as Inspect's ``exec`` does (see the module docstring)."""
    limit = SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE
    channel = await sb.backend.exec(
        sb.id, [*PID_PREAMBLE, *argv], user=user, workdir=cwd, env=env, stdin=True
    )
    data = input.encode("utf-8") if isinstance(input, str) else (input or b"")
    stdout, stderr = _Output(limit), _Output(limit)
    pid_line = bytearray()
    pid = 0

    async def feed_input() -> None:
        for start in range(0, len(data), _CHUNK):
            await channel.write(data[start : start + _CHUNK])
        channel.close_input()

    async def read_output() -> bool:
        """Read both streams to their end; False when one passed the limit."""
        nonlocal pid
        while (message := await channel.read()) is not None:
            stream, chunk = message
            if stream == 1 and not pid:
                pid_line.extend(chunk)
                head, newline, rest = bytes(pid_line).partition(b"\n")
                if not newline:
                    continue
                if head.strip().isdigit():
                    pid, chunk = int(head), rest
                else:  # not our preamble's line: the engine's own message (the process never started)
                    pid, chunk = -1, bytes(pid_line)
            if not (stdout if stream == 1 else stderr).feed(chunk):
                return False
        return True

    writer = asyncio.ensure_future(feed_input())
    try:
        try:
            async with asyncio.timeout(timeout):
                within_limit = await read_output()
        except TimeoutError:
            await _kill(sb, pid)
            raise TimeoutError(f"the command ran longer than its timeout of {timeout:g} s") from None
        if not within_limit:
            await _kill(sb, pid)
            raise OutputLimitExceededError(
                SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE_STR,
                truncated_output=_text(stdout.data),
            )
        code = await _exit_code(channel)
    finally:
        writer.cancel()
        await asyncio.gather(writer, return_exceptions=True)
        await channel.close()
    out, err = _text(stdout.data), _text(stderr.data)
    if pid <= 0 and code != 0:  # the engine could not start the process at all (an unknown user, say)
        who = f" as user {user!r}" if user else ""
        err += f"the command could not be started{who} in the sandbox (exit status {code})\n"
    if code == 126 and argv and f"{argv[0]}: Permission denied" in err:
        raise PermissionError(errno.EACCES, "the file cannot be executed", argv[0])
    return ExecResult(code == 0, code, out, err)


async def _kill(sb: Sandbox, pid: int) -> None:
    """Kill everything the command started (its PID is the preamble's first line)."""
    if pid > 0:
        await sb.signal_tree(pid, "KILL", include_root=True, since="root")


async def _exit_code(channel: object) -> int:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + _EXIT_WAIT_S
    while True:
        code = await channel.exit_code()  # type: ignore[attr-defined]
        if code is not None or loop.time() >= deadline:
            return int(code) if code is not None else 1
        await asyncio.sleep(0.02)


def _text(data: bytes | bytearray) -> str:
    return bytes(data).decode("utf-8", errors="replace")


def resolve(path: str, workdir: str) -> str:
    """``path`` made absolute against the sandbox's working folder, normalised."""
    return posixpath.normpath(path if posixpath.isabs(path) else posixpath.join(workdir, path))


async def read_file(sb: Sandbox, path: str, original: str) -> bytes:
    """The content of the regular file at ``path`` (links followed), read through the engine."""
    for _ in range(_SYMLINK_HOPS):
        try:
            archive = await sb.get_archive(path)
        except FileNotFoundError:
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", original) from None
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            member = tar.next()
            if member is None:
                raise FileNotFoundError(errno.ENOENT, "No such file or directory", original)
            if member.isdir():
                raise IsADirectoryError(errno.EISDIR, "Is a directory", original)
            if member.issym():
                path = resolve(member.linkname, posixpath.dirname(path))
                continue
            if not member.isfile():
                raise PermissionError(errno.EACCES, "not a regular file", original)
            if member.size > SandboxEnvironmentLimits.MAX_READ_FILE_SIZE:
                raise OutputLimitExceededError(
                    SandboxEnvironmentLimits.MAX_READ_FILE_SIZE_STR, truncated_output=None
                )
            handle = tar.extractfile(member)
            return handle.read() if handle is not None else b""
    raise OSError(errno.ELOOP, "Too many levels of symbolic links", original)


async def write_file(sb: Sandbox, path: str, data: bytes, original: str) -> None:
    """Create or replace the file at ``path`` (its folders made first), through the engine."""
    parent, name = posixpath.split(path)
    check = await sb.exec(["/bin/sh", "-c", _PREPARE_WRITE, "sh", parent or "/", path], timeout=30)
    if check.exit_code == 3:
        raise IsADirectoryError(errno.EISDIR, "Is a directory", original)
    if check.exit_code != 0:
        raise PermissionError(errno.EACCES, check.output.strip(), original)
    mode = check.output.strip()
    await sb.put_archive(parent or "/", one_file(name, data, int(mode, 8) if mode.isdigit() else 0o644))


# Make the folders of "$2", refuse a folder in its place (exit 3), and print the mode of the file it
# replaces (a rewritten file keeps it, as a write by a program would).
_PREPARE_WRITE = 'mkdir -p -- "$1" || exit 1; test -d "$2" && exit 3; stat -c %a -- "$2" 2>/dev/null; exit 0'

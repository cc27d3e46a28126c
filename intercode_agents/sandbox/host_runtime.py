"""The pristine fingerprint's runtime channels, read from the engine's host.

:data:`~intercode_agents.sandbox.pristine.RUNTIME_SCRIPT` lists, from inside a sandbox, every channel
but the root file system and the process set: the host and domain name, the state of the harness's
long-lived processes (init, launcher), System V IPC objects, the mount table and every entry of the
other writable mounts. It starts a shell, ``find``, ``sort`` and more in the sandbox each time a pool
takes or checks a reference: 40-150 ms on a busy 2-core machine, charged to the sandbox's cgroup,
which a loaded host starves first. Where the engine runs on this host and we are root (the local
Docker backend's fast paths), :func:`runtime_listing` reads the same channels from here in a few
milliseconds, nothing started in the sandbox:

- the processes' status, limits, OOM score and scheduling from ``/proc/<host pid>``, each checked to
  be the very process the sandbox started (its start time);
- the mount table from the init's ``/proc/<pid>/mountinfo``, and each writable mount's entries with
  type, mode, owner, size, link count, modification and change times (nanoseconds) and link target,
  through :class:`~intercode_agents.sandbox.container_fs.ContainerFiles` (never following a symlink);
- the host and domain name and ``/proc/sysvipc/*`` in the sandbox's own UTS and IPC namespaces, which
  a short-lived thread of ours joins (``setns``: a namespace is a thread's, so no other thread of the
  harness ever sees another namespace).

Its text is not the script's: a fingerprint is only ever compared with one taken the same way on the
same sandbox (a reference taken one way and a check the other never match, so the sandbox is not
reused). The conformance suite checks that every channel a process can write changes both listings.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import stat
import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

from intercode_agents.sandbox.container_fs import ContainerFiles, parse_mountinfo
from intercode_agents.sandbox.contract import HostUnreadable, Proc
from intercode_agents.sandbox.signals import start_time

T = TypeVar("T")
_CLONE_NEWUTS = 0x04000000
_CLONE_NEWIPC = 0x08000000
_STATUS_FIELDS = ("Name", "SigBlk", "SigIgn", "SigCgt", "NoNewPrivs", "Cpus_allowed_list")
_SKIPPED = (" - proc ", " - sysfs ", " - cgroup ", " - cgroup2 ")  # as RUNTIME_SCRIPT skips them
_libc: ctypes.CDLL | None = None


def _setns(fd: int, kind: int) -> None:
    global _libc
    setns = getattr(os, "setns", None)  # Python 3.12+
    if setns is not None:
        setns(fd, kind)
        return
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    if _libc.setns(fd, kind) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def in_namespaces(init: Proc, read: Callable[[], T]) -> T:
    """``read()`` in a thread that joined the UTS and IPC namespaces of ``init`` (and ends after)."""
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            fds = [
                os.open(f"/proc/{init.host_pid}/ns/{kind}", os.O_RDONLY | os.O_CLOEXEC)
                for kind in ("uts", "ipc")
            ]
            try:
                _same_process(init)  # the descriptors are the sandbox's, not a reused PID's
                _setns(fds[0], _CLONE_NEWUTS)
                _setns(fds[1], _CLONE_NEWIPC)
            finally:
                for fd in fds:
                    os.close(fd)
            outcome["value"] = read()
        except BaseException as exc:  # handed to the caller
            outcome["error"] = exc

    thread = threading.Thread(target=run, name="intercode-namespace-reader", daemon=True)
    thread.start()
    thread.join()
    if "error" in outcome:
        error = outcome["error"]
        raise HostUnreadable(f"cannot read the sandbox's namespaces: {error}") from error  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]


def _read(path: str) -> str:
    with open(path, encoding="utf-8", errors="surrogateescape") as fh:
        return fh.read()


def _same_process(proc: Proc) -> None:
    if start_time(_read(f"/proc/{proc.host_pid}/stat")) != proc.start:
        raise HostUnreadable(f"process {proc.host_pid} is no longer the sandbox's")


def _process(proc: Proc) -> list[str]:
    """What RUNTIME_SCRIPT lists of one harness process, from this host."""
    base = f"/proc/{proc.host_pid}"
    status = _read(f"{base}/status").splitlines()
    lines = [f"== process {proc.pid}"]
    lines += [line for line in status if line.split(":", 1)[0] in _STATUS_FIELDS]
    lines += [_read(f"{base}/limits"), _read(f"{base}/oom_score_adj").strip()]
    fields = _read(f"{base}/stat").rsplit(")", 1)[1].split()
    lines.append(f"nice {fields[16]} policy {fields[38]}")
    if fields[0] in "TtXZ":
        lines.append(f"stopped or dead: {fields[0]}")
    _same_process(proc)  # (read last: everything above was this very process's)
    return lines


def _entries(files: ContainerFiles, point: str) -> list[str]:
    """Every entry of the mount at ``point``: type, mode, owner, size, links, times, link target."""

    def row(path: str, st: os.stat_result) -> str:
        link = (files.readlink(path) or "") if stat.S_ISLNK(st.st_mode) else ""
        return "|".join(
            map(str, (path, stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid,
                      st.st_size, st.st_nlink, st.st_mtime_ns, st.st_ctime_ns, link))
        )  # fmt: skip

    top = files.lstat(point)
    if top is None:
        return [f"{point}|missing"]
    rows = [row(point, top)]
    if stat.S_ISDIR(top.st_mode):
        rows += [row(f"{point.rstrip('/')}/{rel}", st) for rel, st in files.walk(point, one_file_system=True)]
    return sorted(rows)


def runtime_listing(files: ContainerFiles, procs: Sequence[Proc], harness: Sequence[int]) -> str:
    """The runtime channels of a sandbox (see the module docstring). ``procs`` are its processes now,
    ``harness`` the container PIDs of the harness's long-lived ones (its init first)."""
    by_pid = {p.pid: p for p in procs}
    missing = [pid for pid in harness if pid not in by_pid]
    if missing:
        return f"harness processes gone: {missing}"  # (never equal to a fresh sandbox's listing)
    init = by_pid[harness[0]]
    uts, ipc = in_namespaces(init, _namespaced)
    lines = [uts]
    for pid in harness:
        lines += _process(by_pid[pid])
    lines.append(ipc)
    mountinfo = _read(f"/proc/{init.host_pid}/mountinfo")
    _same_process(init)
    lines.append("== mounts")
    lines += [line for line in mountinfo.splitlines()]
    for line in mountinfo.splitlines():
        mount = next(parse_mountinfo(line), None)
        if mount is None or not mount.writable or any(s in line for s in _SKIPPED):
            continue
        if mount.point in ("/", "/proc"):
            continue
        lines.append(f"== {mount.point}")
        lines += _entries(files, mount.point)
    return "\n".join(lines)


def _namespaced() -> tuple[str, str]:
    """Run in the sandbox's UTS and IPC namespaces: its names, and its System V IPC objects."""
    uts = f"uts {_read('/proc/sys/kernel/hostname').strip()} {_read('/proc/sys/kernel/domainname').strip()}"
    ipc = "\n".join(f"== sysvipc {kind}\n{_read(f'/proc/sysvipc/{kind}')}" for kind in ("shm", "msg", "sem"))
    return uts, ipc

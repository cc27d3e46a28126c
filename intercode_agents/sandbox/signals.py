"""Signalling a container's processes from the engine's host, without running anything in it.

A timeout must stop what a command started even when the sandbox's process table is full (a fork
bomb leaves no PID for a ``docker exec``). Where the backend's fast paths can list the container's
processes on this host (the local Docker engine, as root: its cgroup), they are found there, matched
to the container's PIDs through their ``NSpid``, chosen by the same rules as the in-container script
(:data:`~.stream.KILL_TREE`, the slow path) and signalled through a pidfd, after checking that the
PID still names the process that was read (its start time), so a PID the host reused meanwhile is
never signalled.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterable
from dataclasses import dataclass

_HZ = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Proc:
    host_pid: int
    pid: int  # in the container's PID namespace
    host_ppid: int
    start: int  # clock ticks since boot
    state: str


def _read(host_pid: int) -> Proc | None:
    try:
        with open(f"/proc/{host_pid}/stat", encoding="utf-8", errors="replace") as fh:
            stat_line = fh.read()
        with open(f"/proc/{host_pid}/status", encoding="utf-8", errors="replace") as fh:
            status = fh.read()
    except OSError:
        return None
    fields = stat_line[stat_line.rindex(")") + 2 :].split()
    nspid = next((line.split()[1:] for line in status.splitlines() if line.startswith("NSpid:")), [])
    if not nspid:
        return None
    return Proc(host_pid, int(nspid[-1]), int(fields[1]), int(fields[19]), fields[0])


def processes_of(host_pids: Iterable[int]) -> list[Proc]:
    """The processes with these host PIDs that still exist."""
    return [p for p in (_read(pid) for pid in host_pids) if p is not None]


def _below(procs: list[Proc], roots: set[int]) -> set[int]:
    """The host PIDs of ``roots`` (host PIDs) and of all their descendants."""
    found = set(roots)
    changed = True
    while changed:
        changed = False
        for p in procs:
            if p.host_pid not in found and p.host_ppid in found:
                found.add(p.host_pid)
                changed = True
    return found


def victims(
    procs: list[Proc],
    *,
    root: int,
    include_root: bool,
    since: str | None,
    alone: Iterable[int],
    sessions: Iterable[int],
) -> list[Proc]:
    """The processes to signal (container PIDs in, :class:`Proc` out), by :data:`~.stream.KILL_TREE`'s
    rules: the tree of ``root``, or with ``since`` ("CS:PIDS" or "root") every process started in that
    window; never the init, ``alone`` or ``sessions`` (with their descendants)."""
    by_pid = {p.pid: p for p in procs}
    spared = {p.host_pid for p in procs if p.pid == 1 or p.pid in set(alone)}
    spared |= _below(procs, {by_pid[s].host_pid for s in sessions if s in by_pid})
    root_proc = by_pid.get(root)
    threshold, existed = -1, set[int]()
    if since == "root":
        threshold = root_proc.start if root_proc else -1
    elif since is not None:
        cs, _, pids = since.partition(":")
        threshold = int(cs) * _HZ // 100
        existed = {int(p) for p in pids.split(",") if p}
    tree = _below(procs, {root_proc.host_pid}) if root_proc else set()
    chosen = []
    for p in procs:
        if threshold >= 0:
            hit = p.start > threshold or (p.start == threshold and p.pid not in existed)
        else:
            hit = p.host_pid in tree
        if not hit or p.state in ("Z", "X"):
            continue
        if p.pid == root:
            if include_root:
                chosen.append(p)
        elif p.host_pid not in spared:
            chosen.append(p)
    return chosen


async def send(procs: list[Proc], sig: str) -> None:
    """Signal each process through a pidfd (never a reused PID); after SIGKILL, wait (a second at
    most) until each is gone or a zombie."""
    number = signal.Signals[f"SIG{sig}"]
    sent = []
    for p in procs:
        try:
            fd = os.pidfd_open(p.host_pid)
        except OSError:
            continue
        try:
            now = _read(p.host_pid)
            if now is not None and now.start == p.start:  # the same process, held by the pidfd now
                signal.pidfd_send_signal(fd, number)
                sent.append(p)
        except OSError:
            pass
        finally:
            os.close(fd)
    if number != signal.SIGKILL:
        return
    for _ in range(100):
        sent = [p for p in sent if _still_running(p)]
        if not sent:
            return
        await asyncio.sleep(0.01)


def _still_running(p: Proc) -> bool:
    now = _read(p.host_pid)
    return now is not None and now.start == p.start and now.state not in ("Z", "X")

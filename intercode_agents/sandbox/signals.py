"""Signalling a sandbox's processes: a command's process tree, or all it started since it began.

A timeout must stop what a command started even when the sandbox's process table is full (a fork
bomb leaves no PID for a ``docker exec``). Where the backend's fast paths can list the container's
processes on this host (the local Docker engine, as root: its cgroup), they are found there, matched
to the container's PIDs through their ``NSpid``, chosen by the same rules as the in-container script
(:data:`KILL_TREE`, the slow path) and signalled through a pidfd, after checking that the PID still
names the process that was read (its start time), so a PID the host reused meanwhile is never
signalled. Elsewhere :data:`KILL_TREE` runs in the sandbox, started again while a full process table
keeps the runtime from starting it.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterable, Sequence

from intercode_agents.errors import SessionDied
from intercode_agents.sandbox.contract import Backend, HostAccess, HostUnreadable, Proc
from intercode_agents.sandbox.stream import ProcessStream

_HZ = os.sysconf("SC_CLK_TCK")
# Seconds between tries of a helper the sandbox's full process table keeps from starting (~8 s).
HELPER_RETRY_WAITS = (0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.5, 2.0, 2.0)
# Listings a SIGKILL takes at most: a process that forks between a listing and its signal leaves a
# child the next listing finds (within ``since``'s window; a tree's orphans go to the init).
KILL_ROUNDS = 20

# Signals a process tree inside the container or, given the moment a command started, every process
# started since then instead: a command's `setsid`, `nohup` and double-forked children leave its tree
# (they are re-parented to the init) but not that window, and what earlier commands left running
# (a server, say) is older. POSIX sh, reading /proc.
#   args: root sig include_root since alone sessions...
#   since: "CS:PIDS", the container's uptime in hundredths of a second when the command started and
#   the comma-separated PIDs alive then (spared if they started in that same tick), "root" for the
#   start of the root process itself (a one-off command), or -1 (the tree only);
#   alone: comma-separated PIDs spared themselves (the launcher); sessions: PIDs spared with their
#   descendants (the sandbox's other sessions). The init and this script are always spared.
KILL_TREE = r"""
root=$1; sig=$2; self=$3; since=$4; alone=" 1 $(printf '%s' "$5" | tr ',' ' ') "; shift 5
keep="$$ $*"
hz=$(getconf CLK_TCK 2>/dev/null) || hz=100
existed=" "
if [ "$since" = root ]; then
  since=-1
  if IFS= read -r line < "/proc/$root/stat" 2>/dev/null; then
    rest=${line##*) }; set -- $rest; since=${20}
  fi
elif [ "$since" != -1 ]; then
  existed=" $(printf '%s' "${since#*:}" | tr ',' ' ') "
  since=$(( ${since%%:*} * hz / 100 ))
fi
below() {  # the PIDs in $1 and all their descendants
  found=" $1 "; changed=1
  while [ "$changed" = 1 ]; do
    changed=0
    for p in $procs; do
      pid=${p%%:*}; rest=${p#*:}; pp=${rest%%:*}
      case "$found" in *" $pid "*) continue ;; esac
      case "$found" in *" $pp "*) found="$found$pid "; changed=1 ;; esac
    done
  done
  printf '%s' "$found"
}
round=0
while [ "$round" -lt 20 ]; do  # KILL: again while a round finds one (forked after it was listed)
round=$((round + 1))
procs=""; sent=""
for f in /proc/[0-9]*/stat; do
  IFS= read -r line < "$f" 2>/dev/null || continue
  pid=${line%% *}; rest=${line##*) }
  set -- $rest
  procs="$procs $pid:$2:${20}"
done
spared=$(below "$keep")
tree=$(below "$root")
for p in $procs; do
  pid=${p%%:*}; start=${p##*:}
  if [ "$since" -ge 0 ]; then  # what started in the window, wherever it is now
    hit=0
    if [ "$start" -gt "$since" ]; then hit=1
    elif [ "$start" = "$since" ]; then case "$existed" in *" $pid "*) ;; *) hit=1 ;; esac
    fi
  else
    case "$tree" in *" $pid "*) hit=1 ;; *) hit=0 ;; esac
  fi
  [ "$hit" = 1 ] || continue
  if [ "$pid" = "$root" ]; then [ "$self" = 1 ] || continue
  else case "$spared$alone" in *" $pid "*) continue ;; esac
  fi
  kill -s "$sig" "$pid" 2>/dev/null && sent="$sent $pid"
done
# A killed process ends when it next runs: wait (a second at most) until each is gone or a zombie,
# so that nothing the command started still runs when the caller goes on.
[ "$sig" = KILL ] && [ -n "$sent" ] || exit 0
tries=0
while [ -n "$sent" ] && [ "$tries" -lt 100 ]; do
  left=""
  for pid in $sent; do
    IFS= read -r line < "/proc/$pid/stat" 2>/dev/null || continue
    rest=${line##*) }
    case "$rest" in Z*|X*) ;; *) left="$left $pid" ;; esac
  done
  sent=$left; tries=$((tries + 1))
  [ -n "$sent" ] && sleep 0.01
done
done
exit 0
"""


async def signal_processes(
    backend: Backend,
    sandbox_id: str,
    host: HostAccess | None,
    root: str,
    sig: str,
    *,
    include_root: bool,
    since: str | None,
    alone: int,
    sessions: Sequence[int],
) -> None:
    """Send ``sig`` to the processes :data:`KILL_TREE`'s rules choose (its arguments, ``alone`` the
    launcher's PID or 0): from the engine's host where ``host`` can list them, else by the script."""
    if host is not None:
        try:
            # A process can fork between the listing and its signal; with SIGKILL the listing is
            # read again, and what a round finds is signalled, until a round finds nothing.
            for _ in range(KILL_ROUNDS if sig == "KILL" else 1):
                chosen = victims(
                    host.processes(),
                    root=int(root),
                    include_root=include_root,
                    since=since,
                    alone=[alone],
                    sessions=sessions,
                )
                if not chosen:
                    break
                await send(chosen, sig)
            return
        except HostUnreadable:
            pass
    argv = ["/bin/sh", "-c", KILL_TREE, "kill-tree", root, sig, "1" if include_root else "0"]
    argv += ["-1" if since is None else since, str(alone), *map(str, sessions)]
    proc = await start_helper(backend, sandbox_id, argv)
    try:
        while await proc.read(10.0) is not None:
            pass
    finally:
        await proc.close()


async def start_helper(backend: Backend, sandbox_id: str, argv: list[str]) -> ProcessStream:
    """Start a harness helper in the sandbox, retrying while it cannot: a fork bomb that fills
    the sandbox's process table makes the runtime fail the exec ("read init-p: connection reset")
    until one of the bomb's processes exits, which under a pids limit they keep doing."""
    for wait in HELPER_RETRY_WAITS:
        proc = ProcessStream(backend, sandbox_id, argv, stdin=False)
        try:
            await proc.start()
            return proc
        except SessionDied:
            await proc.close()
            if not await backend.running(sandbox_id):
                raise
            await asyncio.sleep(wait)
    proc = ProcessStream(backend, sandbox_id, argv, stdin=False)
    await proc.start()  # the last try: its failure is the caller's
    return proc


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


def start_time(stat_line: str) -> int:
    """A process's start time (clock ticks after boot) from the text of its ``/proc/<pid>/stat``."""
    return int(stat_line[stat_line.rindex(")") + 2 :].split()[19])


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
    """The processes to signal (container PIDs in, :class:`Proc` out), by :data:`KILL_TREE`'s
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


def _signal(procs: list[Proc], number: int) -> list[Proc]:
    """Signal each process through a pidfd (never a reused PID); the processes signalled."""
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
    return sent


def kill_now(procs: list[Proc]) -> None:
    """SIGKILL each process (through a pidfd) without waiting for it to end."""
    _signal(procs, signal.SIGKILL)


async def send(procs: list[Proc], sig: str) -> None:
    """Signal each process through a pidfd (never a reused PID); after SIGKILL, wait (a second at
    most) until each is gone or a zombie."""
    number = signal.Signals[f"SIG{sig}"]
    sent = _signal(procs, number)
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

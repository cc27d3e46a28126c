"""Whether a sandbox's main process is doomed, so that what an agent kills ends its episode the same way
every time.

A sandbox's container lives as long as its main process: the launcher, in every image whose command
only idles (see :mod:`.launcher`). Its init (Docker's ``docker-init``, Podman's ``catatonit``) exits
when the main process dies, and the kernel then kills everything left in the container. ``kill -9 -1``
from an agent's shell signals every process but the init and the shell itself, so it kills the launcher;
but the signal only *queues* the kill. The shell survives the call, prints its marker, and the container
stops a moment later, when the launcher, then the init, get to run. Whether the agent's next action
still ran (printing ``after``) or found the sandbox gone depended on that moment.

So after every command of a session the sandbox asks whether the main process is doomed: gone, a
zombie, or holding a pending signal that will end it (SIGKILL, or one whose default action ends a
process and that it neither ignores nor catches). The kernel marks a signal pending inside the
``kill`` call, before the killer's next instruction, so the answer does not depend on timing. A doomed
main process is waited for (the container stops) and the command ends in
:class:`~intercode_agents.errors.SessionDied`, which the envs report as the agent's lost sandbox.

Two readers give the answer: the engine's host reads ``/proc/<pid>/status`` of the main process
(the fast paths: every kind of session), and the shell session reads it itself after each command
(:data:`SHELL_CHECK`, any backend, no process started), passing the verdict in its end marker.
"""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass

from intercode_agents.sandbox.signals import Proc, start_time

# Signals whose default action stops nothing or nobody: a pending one is no death sentence.
_HARMLESS = (
    signal.SIGCHLD,
    signal.SIGCONT,
    signal.SIGSTOP,
    signal.SIGTSTP,
    signal.SIGTTIN,
    signal.SIGTTOU,
    signal.SIGURG,
    signal.SIGWINCH,
)
#: Bit n-1 for each signal n whose default action ends the process.
FATAL_MASK = ((1 << 64) - 1) & ~sum(1 << (int(s) - 1) for s in _HARMLESS)
KILL_BIT = 1 << (int(signal.SIGKILL) - 1)
_FIELDS = re.compile(r"^(State|SigPnd|ShdPnd|SigIgn|SigCgt):\s*(\S+)", re.MULTILINE)


def doomed(status: str) -> bool:
    """Whether the process described by ``status`` (the text of ``/proc/<pid>/status``; empty when
    it is gone) is gone, dead, or about to die of a pending signal."""
    fields = dict(_FIELDS.findall(status))
    state = fields.get("State", "")
    if not state or state[0] in "ZX":
        return True
    try:
        pending = int(fields["SigPnd"], 16) | int(fields["ShdPnd"], 16)
        handled = int(fields["SigIgn"], 16) | int(fields["SigCgt"], 16)
    except (KeyError, ValueError):
        return False
    return bool(pending & KILL_BIT or pending & FATAL_MASK & ~handled)


# The same verdict in Bash builtins, for the shell session's loop (``__ic_main``: the main process's
# PID in the container, 0 when unknown); sets ``__ic_doom`` to 1 or 0. No process is started, and it
# never fails, whatever ``set -e`` the agent left on.
SHELL_CHECK = (
    "__ic_doom=0\n"
    'if [ "${__ic_main:-0}" != 0 ]; then\n'
    "  __ic_st=; read -r -d '' __ic_st 2>/dev/null < \"/proc/$__ic_main/status\" || :\n"
    "  case $__ic_st in '' | *$'\\nState:\\t'[ZX]*) __ic_doom=1 ;; esac\n"
    "  [[ $__ic_st =~ SigPnd:.([0-9a-f]+).*ShdPnd:.([0-9a-f]+).*SigIgn:.([0-9a-f]+).*SigCgt:.([0-9a-f]+) ]]"
    " && (( (16#${BASH_REMATCH[1]} | 16#${BASH_REMATCH[2]}) & "
    f"({KILL_BIT} | (16#{FATAL_MASK:x} & ~(16#${{BASH_REMATCH[3]}} | 16#${{BASH_REMATCH[4]}}))) ))"
    " && __ic_doom=1 || :\n"
    "fi\n"
)


@dataclass(frozen=True)
class MainProcess:
    """The sandbox's main process: its PID in the container, and as this host sees it (fast paths)."""

    pid: int
    host: Proc | None = None

    def doomed_on_host(self) -> bool:
        """The host's verdict (False when this host cannot see the process)."""
        if self.host is None:
            return False
        proc = f"/proc/{self.host.host_pid}"
        try:
            with open(f"{proc}/status", encoding="utf-8", errors="replace") as fh:
                status = fh.read()
            with open(f"{proc}/stat", encoding="utf-8", errors="replace") as fh:
                stat_line = fh.read()  # (read after the status: the PID still names the process)
        except OSError:
            return True  # gone
        if start_time(stat_line) != self.host.start:
            return True  # gone, and its PID names another process now
        return doomed(status)


def find_main(procs: list[Proc], known_pid: int | None) -> Proc | None:
    """The main process among a container's processes: ``known_pid`` (the launcher) when given, else the
    first child of the init (PID 1); None when PID 1 is the main process itself (no init: nothing
    inside can kill it) or it cannot be told."""
    if known_pid is not None:
        return next((p for p in procs if p.pid == known_pid), None)
    init = next((p for p in procs if p.pid == 1), None)
    children = [p for p in procs if init is not None and p.host_ppid == init.host_pid]
    return min(children, key=lambda p: (p.start, p.pid), default=None)

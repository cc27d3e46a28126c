"""The pristine contract: what a sandbox's state is made of, and when a used one may be handed out again.

A process in a container can leave state for a later one through these channels:

- the root file system (the overlay upper directory: every path written, made or deleted);
- the other writable mounts: the tmpfs folders Docker mounts (``/dev``, ``/dev/shm``,
  ``/sys/fs/cgroup``), the POSIX message queues (``/dev/mqueue``), the pseudo-terminals
  (``/dev/pts``), the files Docker bind-mounts (``/etc/hostname``, ``/etc/hosts``,
  ``/etc/resolv.conf``) and any tmpfs or volume a user configures;
- System V IPC objects (shared memory, message queues, semaphores);
- the host name and domain name;
- processes, and through them anything a process can hold: sockets, locks, files in memory;
- the long-lived processes the harness keeps in the sandbox (its init, the launcher), whose own
  counters (``/proc/<pid>/io``, ``stat``: the bytes and CPU time of everything they served) and whose
  memory (same-user ``ptrace`` is allowed) any later process can read or change, together with the
  PID counter and the cgroup's usage counters (``/sys/fs/cgroup/*``).

The last group cannot be proven unchanged: a sandbox in which untrusted code ran is therefore never
handed out again, to anyone (:class:`~intercode_agents.sandbox.pool.SandboxPool` removes it). Only the
harness's own commands (a gold solution, a read-only probe) may share a sandbox, one after another,
and only when a :class:`Fingerprint` of every other channel equals the one taken when the sandbox
was fresh. Such a recycled sandbox never goes to untrusted code.

:data:`RUNTIME_SCRIPT` lists every channel but the root file system and the processes from inside
the sandbox (it only reads). The root file system comes from the overlay upper directory where it is
readable on this host, else from the Engine API's change list together with :data:`ROOT_SCRIPT`'s
listing of every entry (the change list alone misses a folder whose content changed and changed
back); the processes from the container's cgroup, else from the Engine API.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# POSIX sh; reads only. Every writable mount but the root and /proc is listed entry by entry with
# its type, mode, owner, size, link count and modification and change times (a change time cannot
# be set back from user space, so a file written and restored still differs).
# Its arguments are the PIDs of the harness's long-lived processes (the init, the launcher): their
# limits, scheduling (nice value, policy), signal dispositions and OOM score are listed too, and
# whether one is stopped or dead; not whether it is running or asleep at that instant, which a
# loaded host changes by itself.
RUNTIME_SCRIPT = r"""
export LC_ALL=C
printf 'uts %s %s\n' "$(cat /proc/sys/kernel/hostname)" "$(cat /proc/sys/kernel/domainname)"
for pid in "$@"; do
  printf '== process %s\n' "$pid"
  grep -E '^(Name|SigBlk|SigIgn|SigCgt|NoNewPrivs|Cpus_allowed_list):' "/proc/$pid/status"
  cat "/proc/$pid/limits" "/proc/$pid/oom_score_adj"
  IFS= read -r line < "/proc/$pid/stat" && {
    rest=${line##*) }; set -- $rest; echo "nice ${17} policy ${39}"
    case $1 in [TtXZ]) echo "stopped or dead: $1" ;; esac
  }
done
for kind in shm msg sem; do
  printf '== sysvipc %s\n' "$kind"
  cat "/proc/sysvipc/$kind" 2>/dev/null
done
printf '== mounts\n'
points=""
while read -r id parent dev root point options rest; do
  printf '%s %s %s %s\n' "$dev" "$root" "$point" "$options"
  case "$options" in rw|rw,*) ;; *) continue ;; esac
  case " $rest " in *" - proc "*|*" - sysfs "*|*" - cgroup "*|*" - cgroup2 "*) continue ;; esac
  case "$point" in /|/proc) continue ;; esac
  points="$points
$(printf '%b' "$point")"
done < /proc/self/mountinfo
printf '%s\n' "$points" | while IFS= read -r point; do
  [ -n "$point" ] || continue
  printf '== %s\n' "$point"
  find "$point" -xdev -printf '%p|%y|%m|%U|%G|%s|%n|%T@|%C@|%l\n' 2>&1 | sort
done
"""


# The slow path's view of the root file system (POSIX sh and findutils; reads only), for backends
# whose writable layer cannot be read from this host: every entry with its type, mode, owner, size,
# blocks, link count and modification and change times. Docker's change list misses a folder whose
# content changed and changed back (a file made and deleted in it), but not its change time, which
# no process can set back. Mount points (``/proc``, ``/dev``, bind-mounted files) are left out: their
# own entry is the mounted file system's root (``/proc``'s link count is the number of processes),
# and their content is the other channels'. It runs only in sandboxes where nothing but the harness ran.
ROOT_SCRIPT = r"""
export LC_ALL=C
root=$(stat -c %d /)
find / -xdev -printf '%D|%p|%y|%m|%U|%G|%s|%b|%n|%T@|%C@|%l\n' 2>&1 \
  | awk -F'|' -v d="$root" '$1 == d || NF < 12' | sort
"""


@dataclass(frozen=True)
class Fingerprint:
    """A sandbox's state on every channel the harness can read (see the module docstring)."""

    files: Any  # the overlay upper directory's entries, or the change list and ROOT_SCRIPT's listing
    runtime: str  # RUNTIME_SCRIPT's listing (a few kilobytes)
    pids: frozenset[int]

"""The engine host's kernel budgets, which every sandbox shares unless they are out of reach.

Sandboxes run as root (or one fixed user) of the engine's host: without user namespaces, a
container's root is the host's. The kernel counts some objects per user, not per container, against
a host-wide sysctl: inotify instances (128 by default) and watches, epoll watches, and the pages of
pipe buffers past which a new pipe gets two. Others it counts for the whole host: open files, AIO
events (65536 by default), PIDs. One episode that takes a whole budget leaves every other sandbox,
and often the harness and the engine themselves, without: a concurrent episode's ``tail -f`` falls
back to polling, its ``inotify_init``, ``open`` or ``io_setup`` fails, its pipes shrink. Each of
these objects is charged to the memory cgroup (or, for PIDs, the pids limit) of the sandbox that
makes it, so once the shared budget is out of reach, a sandbox's own limits are what bound it.
``raise_limits`` puts them there (``scripts/run.sh`` runs it as root: ``python -m
intercode_agents.sandbox.host_limits --raise``), and a local engine's backend warns once when they
are still lower.

Three more are counted per user but checked against each process's own rlimit: POSIX message queue
bytes (819200 by default), queued real-time signals and SysV memory locked with SHM_LOCK. What one
sandbox holds of them counts against the others' limits. Raising a sandbox's limits above the
engine's would need CAP_SYS_RESOURCE, which the engine's runtime may not have (this project's CI
machine's root does not), so they stay shared: only user namespaces of their own per sandbox would
split them (docs/ARCHITECTURE.md, the pristine contract).
"""

from __future__ import annotations

import argparse
import logging
import sys
from dataclasses import dataclass
from pathlib import Path

INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1
PID_MAX_LIMIT = 4 * 1024 * 1024  # the kernel's ceiling on 64-bit machines
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Budget:
    sysctl: str  # as `sysctl` names it
    wanted: int  # the value that puts the budget out of reach (0 means "no limit" where noted)
    no_limit_is_zero: bool = False  # the kernel reads 0 as unlimited

    @property
    def path(self) -> str:
        return self.sysctl.replace(".", "/")

    def reached(self, value: int) -> bool:
        if self.no_limit_is_zero:
            return value == 0
        return value >= self.wanted


BUDGETS = (
    Budget("fs.inotify.max_user_instances", INT_MAX),
    Budget("fs.inotify.max_user_watches", INT_MAX),
    Budget("fs.epoll.max_user_watches", INT_MAX),
    Budget("fs.pipe-user-pages-soft", 0, no_limit_is_zero=True),
    # host-wide, whoever the user: open files (past it, only CAP_SYS_ADMIN opens any), AIO events,
    # PIDs (each sandbox may hold its pids limit)
    Budget("fs.file-max", LONG_MAX),
    Budget("fs.aio-max-nr", INT_MAX),
    Budget("kernel.pid_max", PID_MAX_LIMIT),
)


def _current(path: Path) -> int | None:
    """A sysctl's value, or None where this kernel has no such budget (so nothing to share)."""
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def shortfalls(proc_sys: Path = Path("/proc/sys")) -> list[str]:
    """The budgets of this host still within one sandbox's reach, as ``name = value (want ...)``."""
    found = []
    for budget in BUDGETS:
        value = _current(proc_sys / budget.path)
        if value is not None and not budget.reached(value):
            found.append(f"{budget.sysctl} = {value} (want {budget.wanted})")
    return found


def raise_limits(proc_sys: Path = Path("/proc/sys")) -> list[str]:
    """Set every budget of :data:`BUDGETS` that falls short (needs root); returns what it set."""
    done = []
    for budget in BUDGETS:
        path = proc_sys / budget.path
        value = _current(path)
        if value is not None and not budget.reached(value):
            path.write_text(f"{budget.wanted}\n")
            done.append(f"{budget.sysctl} = {budget.wanted}")
    return done


_warned = False


def warn_once() -> None:
    """Log, once per process, the budgets a sandbox of a local engine could still take from the rest."""
    global _warned
    if _warned:
        return
    _warned = True
    if found := shortfalls():
        log.warning(
            "the engine host's kernel budgets are shared by every sandbox, and one episode can "
            "use them up for all the others: %s. Raise them as root with "
            "`python -m intercode_agents.sandbox.host_limits --raise` (scripts/run.sh setup does).",
            "; ".join(found),
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m intercode_agents.sandbox.host_limits",
        description="Check, or raise (as root), the host's kernel budgets the sandboxes share.",
    )
    parser.add_argument("--raise", dest="raise_", action="store_true", help="set the budgets that fall short")
    args = parser.parse_args(argv)
    if args.raise_:
        try:
            done = raise_limits()
        except PermissionError as exc:
            print(f"cannot raise the budgets (root is needed): {exc}", file=sys.stderr)
            return 1
        print("; ".join(done) if done else "every budget was already out of a sandbox's reach")
        return 0
    found = shortfalls()
    print("; ".join(found) if found else "every budget is out of a sandbox's reach")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())

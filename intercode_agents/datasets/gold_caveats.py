"""Golds that cannot be scored here as the paper scored them: one declared list, with the reason for each.

A gold whose output or effect depends on something outside its task (the network, the wall clock, the
host's load, disk or processes, the history of the original's long-lived containers) scores the same
agent differently here than in the original, or differently from one run to the next. Each such task
is listed once, here, with what it depends on and how this project treats it:

- ``corrupt``: the gold cannot do here what it did there (it downloads, resolves or pings, and the
  sandboxes have no network; it prints the time to the second; a tool here lacks the option it uses).
  The env scores the task as corrupt in every execution and reward mode, without running the gold:
  unscored, never a free win nor a free loss.
- ``paper``: what it depends on is reproduced by paper execution (the files' ages as seen from the
  episode's clock, the host names of the original's two containers:
  :mod:`intercode_agents.envs.paper_execution`). Elsewhere it drifts with the images' age or differs
  from the original, so a re-score in the session execution leaves it out.
- ``volatile``: its output drifts between two runs here (the load average, disk figures, a race with
  a background job, files under ``/proc``). A gold replay may fail it; a re-score leaves it out.
- ``unlike``: stable here, but the original's outcome depended on what no sandbox can reproduce (the
  order in which its reused containers listed a folder, what earlier gold runs left, its process
  tree). A re-score leaves it out; an evaluation scores it as usual.
- ``defect``: the gold is broken in the data itself (Spider's syntax errors, a Bash gold that never
  finishes as written); the env finds that on its own and reports the task corrupt.

A caveat may hold in one execution only (``executions``): fs1/55's gold never finishes as written, but
ends at once as the original ran it.

Re-scores (``intercode-agents rescore``) leave the listed tasks out of both sides of the comparison
and print them with their reason; the gold replay test (``tests/test_gold_replay.py``) allows exactly
the failures and corrupt tasks listed here.

How the list was made: every Bash gold was read for what it consults besides its task's files (time
tests of ``find``, ``date``, ``cal``, host names, ``env``, process lists, ``w``, ``df`` and ``du``,
network tools, archive listings), every gold was replayed in fresh sandboxes in both executions, and
the paper logs' outputs were compared with ours. ``tests/test_gold_caveats.py`` and
``tests/test_gold_replay.py`` keep the list complete and true.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Treatment = Literal["corrupt", "paper", "volatile", "unlike", "defect"]
Cause = Literal["network", "clock", "host", "load", "disk", "race", "history", "tool", "data"]


EXECUTIONS = ("session", "paper")


@dataclass(frozen=True)
class GoldCaveat:
    cause: Cause
    treatment: Treatment
    reason: str
    executions: tuple[str, ...] = EXECUTIONS  # where it holds


def _c(
    cause: Cause, treatment: Treatment, reason: str, executions: tuple[str, ...] = EXECUTIONS
) -> GoldCaveat:
    return GoldCaveat(cause, treatment, reason, executions)


CAVEATS: dict[str, GoldCaveat] = {
    # -- the network: the sandboxes have none, the original's containers had one
    "bash/fs2/49": _c(
        "network", "corrupt", "downloads http://example.com/textfile.txt (curl fetched 1,256 bytes there)"
    ),
    "bash/fs2/52": _c("network", "corrupt", "prints the container's network address from /etc/hosts"),
    "bash/fs4/1": _c("network", "corrupt", "asks a DNS server (dig -x 127.0.0.1) and prints its timings"),
    "bash/fs4/12": _c("network", "corrupt", "resolves google.com (dig +short)"),
    "bash/fs4/19": _c("network", "corrupt", "pings a host by name"),
    # -- the clock
    "bash/fs2/42": _c("clock", "corrupt", "prints the date to the second, and appends it to a file"),
    "bash/fs1/12": _c("clock", "paper", "find -mtime +7: the files' ages at the episode"),
    "bash/fs2/18": _c("clock", "paper", "find -mmin +5 ... -delete: the files' ages at the episode"),
    "bash/fs2/19": _c("clock", "paper", "find -mmin +5 ... -delete: the files' ages at the episode"),
    "bash/fs2/25": _c("clock", "paper", "find -mtime +7 ... rm: the files' ages at the episode"),
    "bash/fs2/32": _c("clock", "paper", "find -mtime +31 ... rm: the files' ages at the episode"),
    "bash/fs2/39": _c("clock", "paper", "tar of find -mtime -60: the files' ages at the episode"),
    "bash/fs2/41": _c("clock", "paper", "find -mtime +31 ... rm: the files' ages at the episode"),
    "bash/fs3/0": _c("clock", "paper", "find -daystart -mtime -30: the files' ages at the episode"),
    "bash/fs3/2": _c("clock", "paper", "find -cmin -60: the files' change times at the episode"),
    **{
        task_id: _c(
            "history",
            "unlike",
            f"find {test}: access times, which the original's reads (its git status after every action) had "
            "made recent even for the files its fixture dated; an image keeps no access time of its own",
        )
        for task_id, test in (("bash/fs3/3", "-amin -60"), ("bash/fs3/12", "-atime +1"))
    },
    "bash/test/5": _c("clock", "paper", "find -mtime -7: the links' ages at the episode"),
    "bash/test/13": _c("clock", "paper", "find -mmin -120: the files' ages at the episode"),
    "bash/test/20": _c("clock", "paper", "find -mtime -1: the files' ages at the episode"),
    # -- the host
    "bash/fs4/4": _c(
        "host",
        "unlike",
        "env lists the variables of the original's image (script, file_system_version) and each container's "
        "own host name, which differed between the agent's and the gold's",
    ),
    "bash/fs4/21": _c(
        "tool", "corrupt", "cal -h: Debian's cal has no -h and prints its usage (Ubuntu's had)"
    ),
    "bash/fs1/46": _c("host", "unlike", "find /var/log -mtime +1: the ages of the original image's own logs"),
    "bash/fs4/5": _c(
        "host",
        "volatile",
        "pstree -a prints the process tree, which here follows how the command was started (an action, "
        "a gold run) and which in the original had bash as PID 1",
    ),
    "bash/fs4/25": _c("load", "volatile", "prints the host's load average"),
    "bash/fs2/36": _c("disk", "volatile", "df prints the space the disk has left now"),
    "bash/fs3/44": _c("disk", "volatile", "df prints the disk's current usage"),
    "bash/fs3/50": _c("disk", "volatile", "df prints the disk's current use in percent"),
    **{
        task_id: _c(
            "disk",
            "unlike",
            "du of folders: disk figures that in the original followed what earlier episodes did in its "
            "reused containers (its gold container counted /workspace as 100K where a fresh one counts 96K)",
        )
        for task_id in ("bash/fs3/14", "bash/fs3/16", "bash/fs3/34", "bash/fs3/49", "bash/test/10")
    },
    "bash/fs1/30": _c(
        "host",
        "volatile",
        "counts the files under / (${DIRECTORY} is unset), /proc and /sys too, which follow the host",
    ),
    "bash/fs1/11": _c(
        "race", "volatile", "starts a background pipeline whose output races the command's end"
    ),
    # -- the original's long-lived containers
    "bash/fs2/48": _c(
        "history",
        "unlike",
        "tar -v lists /system/folder1 in directory order, which in the original's reused containers followed "
        "the files earlier episodes had deleted and git had restored",
    ),
    "bash/fs3/42": _c(
        "history",
        "unlike",
        "ln -s into ~/newlinks: the original's gold container kept ~/newlinks from earlier gold runs",
    ),
    # -- golds that fail by themselves
    "bash/fs1/55": _c(
        "data",
        "defect",
        "`grep -r Hello *` from / reads /dev/zero forever and never finishes (as the original ran it, its "
        "quotes split, its awk fails at once and the grep stops at its first match)",
        ("session",),
    ),
    **{
        f"sql/spider/{n}": _c("data", "defect", "the Spider gold SQL has a syntax error")
        for n in (164, 178, 225, 531, 638, 802)
    },
}


def caveat(task_id: str) -> GoldCaveat | None:
    """The declared caveat of a task, or None."""
    return CAVEATS.get(task_id)


def corrupt_reason(task_id: str) -> str | None:
    """Why the task is corrupt here in every execution and reward mode (its gold is never run), or None."""
    found = CAVEATS.get(task_id)
    return found.reason if found and found.treatment == "corrupt" else None


def left_out_of_rescore(task_id: str, execution: str) -> GoldCaveat | None:
    """The caveat that keeps a task out of a re-score's comparison in ``execution``, or None."""
    found = CAVEATS.get(task_id)
    if found is None or execution not in found.executions:
        return None
    if found.treatment == "paper" and execution == "paper":
        return None
    return found


def ids_with(*treatments: Treatment, prefix: str = "", execution: str | None = None) -> set[str]:
    """The task ids (starting with ``prefix``) whose caveat has one of ``treatments`` (in ``execution``)."""
    return {
        t
        for t, c in CAVEATS.items()
        if c.treatment in treatments and t.startswith(prefix) and execution in (None, *c.executions)
    }

"""Golds that cannot be scored here as the paper scored them: one declared list, with the reason for each.

Each env declares its own list in a file beside its YAML (``caveats: bash/caveats.yaml`` in
``envs/bash.yaml``; a user's env may declare one too); this module reads them. A gold whose output or
effect depends on something outside its task (the network, the wall clock, the
host's load, disk or processes, the history of the original's long-lived containers) scores the same
agent differently here than in the original, or differently from one run to the next. Each such task
is listed once, in its env's caveats file, with what it depends on and how this project treats it:

- ``corrupt``: the gold cannot do here what it did there (it downloads, resolves or pings, and the
  sandboxes have no network; it prints the time to the second; a tool here lacks the option it uses).
  The env scores the task as corrupt in every execution and reward mode, without running the gold:
  unscored, never a free win nor a free loss.
- ``paper``: what it depends on is reproduced by paper execution (the files' ages as seen from the
  episode's clock, the host names of the original's two containers:
  :mod:`intercode_agents.envs.bash.paper`). Elsewhere it drifts with the images' age or differs
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
and print them with their reason; the gold replay test (``tests/envs/test_gold_replay.py``) allows exactly
the failures and corrupt tasks listed here.

How the list was made: every Bash gold was read for what it consults besides its task's files (time
tests of ``find``, ``date``, ``cal``, host names, ``env``, process lists, ``w``, ``df`` and ``du``,
network tools, archive listings), every gold was replayed in fresh sandboxes in both executions, and
the paper logs' outputs were compared with ours. ``tests/datasets/test_gold_caveats.py`` and
``tests/envs/test_gold_replay.py`` keep the list complete and true.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml

from intercode_agents.errors import ConfigError
from intercode_agents.spec import env_names, load_spec

Treatment = Literal["corrupt", "paper", "volatile", "unlike", "defect"]
Cause = Literal["network", "clock", "host", "load", "disk", "race", "history", "tool", "data"]


EXECUTIONS = ("session", "paper")


@dataclass(frozen=True)
class GoldCaveat:
    cause: Cause
    treatment: Treatment
    reason: str
    executions: tuple[str, ...] = EXECUTIONS  # where it holds


def _read(path: Path) -> dict[str, GoldCaveat]:
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read the gold caveats {path}: {exc}") from exc
    table: dict[str, GoldCaveat] = {}
    for task_id, row in raw.items():
        try:
            table[str(task_id)] = GoldCaveat(
                row["cause"], row["treatment"], str(row["reason"]), tuple(row.get("executions", EXECUTIONS))
            )
        except (KeyError, TypeError) as exc:
            raise ConfigError(
                f"{path}: the caveat of {task_id!r} needs a cause, a treatment and a reason"
            ) from exc
    return table


@functools.cache
def _env_caveats(env: str) -> dict[str, GoldCaveat]:
    """The caveats an env declares (its YAML's ``caveats``: a file beside it); none when it declares
    none or is unknown."""
    try:
        spec = load_spec(env)
    except ConfigError:
        return {}
    name = spec.caveats
    return _read(spec.folder / name) if name else {}


def all_caveats() -> dict[str, GoldCaveat]:
    """Every declared caveat of the known envs, by task id."""
    return {task_id: c for env in env_names() for task_id, c in _env_caveats(env).items()}


def _of(task_id: str) -> GoldCaveat | None:
    return _env_caveats(task_id.split("/", 1)[0]).get(task_id)


def caveat(task_id: str) -> GoldCaveat | None:
    """The declared caveat of a task, or None."""
    return _of(task_id)


def corrupt_reason(task_id: str) -> str | None:
    """Why the task is corrupt here in every execution and reward mode (its gold is never run), or None."""
    found = _of(task_id)
    return found.reason if found and found.treatment == "corrupt" else None


def left_out_of_rescore(task_id: str, execution: str) -> GoldCaveat | None:
    """The caveat that keeps a task out of a re-score's comparison in ``execution``, or None."""
    found = _of(task_id)
    if found is None or execution not in found.executions:
        return None
    if found.treatment == "paper" and execution == "paper":
        return None
    return found


def ids_with(*treatments: Treatment, prefix: str = "", execution: str | None = None) -> set[str]:
    """The task ids (starting with ``prefix``) whose caveat has one of ``treatments`` (in ``execution``)."""
    return {
        t
        for t, c in all_caveats().items()
        if c.treatment in treatments and t.startswith(prefix) and execution in (None, *c.executions)
    }

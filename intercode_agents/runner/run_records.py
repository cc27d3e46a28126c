"""Which records of a run directory count: one per planned episode, never a duplicate or a stranger.

A run plans its episodes from ``run.json`` (:class:`RunPlan`): every task of ``task_ids`` times
``epochs``, keyed by ``(task_id, epoch)``, epoch ``e`` with seed ``seed + e - 1`` (None without a seed),
all of one env, strategy, model and reward mode. Reading ``trajectories.jsonl`` against that plan
(:func:`read_run_records`), in file order:

- a record of another env, strategy, model or reward mode, of a task outside the run, of an epoch the
  run does not have or with another seed is **foreign**: reported and ignored;
- the first record of a planned episode is accepted;
- a later record of the same episode is **a duplicate**, reported and ignored, unless the accepted one
  ended in an env or model error and the later one made more attempts (``--resume --retry-errors``
  re-played it): then the later one replaces it, and the earlier one is kept as ``superseded``.

So resume, ``summary.json`` and ``report`` count exactly the same records, and nothing a second writer,
a copy-paste or a merge put into the file is counted twice. Without a ``run.json`` (records gathered
by hand) only duplicates can be found. The file itself is never rewritten.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from intercode_agents.errors import ConfigError
from intercode_agents.runner.run_dir import TORN_LINE, parse_lines
from intercode_agents.trajectory import RETRYABLE_OUTCOMES, Trajectory

EpisodeKey = tuple[str, int]  # task id, epoch


def episode_key(traj: Trajectory) -> EpisodeKey:
    return traj.task_id, traj.epoch


def epoch_seed(seed: int | None, epoch: int) -> int | None:
    """The seed of a run's ``epoch``-th sample of each task."""
    return None if seed is None else seed + epoch - 1


@dataclass(frozen=True)
class RunPlan:
    """The episodes a run set out to play, and what its records must say about themselves."""

    env: str
    task_ids: tuple[str, ...]
    epochs: int = 1
    seed: int | None = None
    strategy: str | None = None  # None: not checked
    model: str | None = None
    reward_mode: str | None = None

    @classmethod
    def from_settings(cls, settings: dict[str, Any]) -> RunPlan:
        """The plan of a ``run.json``; ConfigError when it lacks what a plan needs."""
        try:
            return cls(
                env=str(settings["env"]),
                task_ids=tuple(str(t) for t in settings["task_ids"]),
                epochs=int(settings.get("epochs") or 1),
                seed=settings.get("seed"),
                strategy=settings.get("strategy"),
                model=settings.get("model"),
                reward_mode=settings.get("reward"),
            )
        except (KeyError, TypeError, ValueError) as exc:
            why = f"{type(exc).__name__}: {exc}"
            raise ConfigError(f"the run settings do not describe a run ({why})") from None

    @property
    def size(self) -> int:
        return len(self.task_ids) * self.epochs

    def keys(self) -> list[EpisodeKey]:
        return [(task_id, epoch) for epoch in range(1, self.epochs + 1) for task_id in self.task_ids]

    def foreign(self, traj: Trajectory, task_ids: frozenset[str] | None = None) -> str | None:
        """Why ``traj`` does not belong to this run, or None if it does."""
        if traj.env != self.env:
            return f"env {traj.env!r} is not the run's ({self.env!r})"
        if traj.task_id not in (task_ids if task_ids is not None else set(self.task_ids)):
            return f"task {traj.task_id} is not in the run"
        if not 1 <= traj.epoch <= self.epochs:
            return f"epoch {traj.epoch} is not in the run ({self.epochs} epoch(s))"
        expected_seed = epoch_seed(self.seed, traj.epoch)
        if traj.seed != expected_seed:
            return f"seed {traj.seed!r} is not the run's seed for epoch {traj.epoch} ({expected_seed!r})"
        for label, recorded, planned in (
            ("strategy", traj.strategy, self.strategy),
            ("model", traj.model, self.model),
            ("reward mode", traj.reward_mode, self.reward_mode),
        ):
            if planned is not None and recorded != planned:
                return f"{label} {recorded!r} is not the run's ({planned!r})"
        return None


@dataclass(frozen=True)
class IgnoredRecord:
    """A line of ``trajectories.jsonl`` that is not counted, and why."""

    line: int
    why: str
    task_id: str | None = None
    epoch: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "task_id": self.task_id, "epoch": self.epoch, "why": self.why}

    def describe(self) -> str:
        where = f"line {self.line}" + (f" ({self.task_id}, epoch {self.epoch})" if self.task_id else "")
        return f"{where}: {self.why}"


@dataclass
class RunRecords:
    """The counted records of a run directory, one per episode, and the lines that were not counted."""

    accepted: dict[EpisodeKey, Trajectory] = field(default_factory=dict)
    ignored: list[IgnoredRecord] = field(default_factory=list)
    superseded: list[Trajectory] = field(default_factory=list)  # errored records a retry replaced
    valid_length: int = 0  # bytes of the file up to a torn last line

    @property
    def records(self) -> list[Trajectory]:
        return list(self.accepted.values())

    def ignored_json(self) -> list[dict[str, Any]]:
        return [item.to_json() for item in self.ignored]


def read_run_records(path: Path, plan: RunPlan | None, *, bad_lines: str = "raise") -> RunRecords:
    """Read ``path`` by the rules of the module docstring.

    ``bad_lines``: a line in the middle that is no record raises ConfigError (``"raise"``, for a
    resume: the user should look at it) or is listed as ignored (``"ignore"``, for a report). A torn
    last line is always listed as ignored (a resume cuts it off before appending).
    """
    result = RunRecords()
    if not path.is_file():
        return result
    parsed, result.valid_length = parse_lines(path.read_bytes())
    task_ids = frozenset(plan.task_ids) if plan is not None else None
    first_line: dict[EpisodeKey, int] = {}
    for number, item in parsed:
        if isinstance(item, str):
            if bad_lines == "raise" and item != TORN_LINE:
                raise ConfigError(f"{path} line {number} is {item}; fix or remove that line, then resume")
            result.ignored.append(IgnoredRecord(number, item))
            continue
        key = episode_key(item)
        why = plan.foreign(item, task_ids) if plan is not None else None
        current = result.accepted.get(key)
        if why is None and current is not None:
            if current.outcome in RETRYABLE_OUTCOMES and item.attempts > current.attempts:
                result.superseded.append(current)
            else:
                why = f"a duplicate of the record on line {first_line[key]}"
        if why is not None:
            result.ignored.append(IgnoredRecord(number, why, item.task_id, item.epoch))
            continue
        result.accepted[key] = item
        first_line[key] = number
    return result

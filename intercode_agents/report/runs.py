"""Run directories as the report reads them: the records that count, their tags and the metrics.

Reading a run directory: ``trajectories.jsonl`` against the plan of its ``run.json`` by the rules of
:mod:`intercode_agents.runner.run_records`, exactly as a resume counts them (lines that are no
record, duplicates and foreign records are listed and not counted; a retry of a recorded error
replaces it). The metrics are always computed from those records
(:func:`intercode_agents.metrics.summary.summarize`, with the run's turn budget and planned episode
count), never taken from ``summary.json``, so an edited or stale summary cannot change a report.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from intercode_agents.errors import ConfigError
from intercode_agents.metrics.failure_modes import failure_tags
from intercode_agents.metrics.summary import exclusion_reason, summarize
from intercode_agents.runner.run_dir import RUN_JSON, TRAJECTORIES, read_run_settings
from intercode_agents.runner.run_records import IgnoredRecord, RunPlan, read_run_records
from intercode_agents.trajectory import Trajectory

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")
TaskKey = tuple[str, str, int]  # env, task id, epoch


@dataclass
class Run:
    """One run directory, read and summarized."""

    directory: Path
    trajectories: dict[TaskKey, Trajectory]
    ignored: list[IgnoredRecord]
    superseded: int  # recorded errors that a retry replaced
    summary: dict[str, Any]
    plan_note: str  # where the plan came from
    label: str = ""
    color: str = PALETTE[0]
    tags: dict[TaskKey, list[str]] = field(default_factory=dict)


def _turn_budget(settings: dict[str, Any]) -> int | None:
    if "turn_budget" in settings:
        return settings["turn_budget"]
    return None if settings.get("model") == "gold" else settings.get("turns")  # runs before turn_budget


def load_run(directory: Path) -> Run:
    """Read one run directory (see the module docstring)."""
    if not directory.is_dir():
        raise ConfigError(f"run directory {directory} does not exist or is not a directory")
    path = directory / TRAJECTORIES
    if not path.is_file():
        raise ConfigError(f"{directory} has no {TRAJECTORIES}: is it a run directory?")
    settings: dict[str, Any] = {}
    plan = None
    note = f"no {RUN_JSON}: foreign records cannot be told apart"
    if (directory / RUN_JSON).is_file():
        settings = read_run_settings(directory)
        plan = RunPlan.from_settings(settings)
        note = RUN_JSON
    read = read_run_records(path, plan, bad_lines="ignore")
    trajs = read.records
    latest = {(t.env, t.task_id, t.epoch): t for t in trajs}
    tags = {key: failure_tags(traj) for key, traj in latest.items() if exclusion_reason(traj) is None}
    summary = summarize(
        trajs,
        turn_budget=_turn_budget(settings),
        planned=plan.size if plan is not None else None,
        ignored=read.ignored_json(),
        tags_of=lambda t: tags[(t.env, t.task_id, t.epoch)],
        epochs=plan.epochs if plan is not None else None,
    )
    return Run(directory, latest, read.ignored, len(read.superseded), summary, note, tags=tags)


def label_runs(runs: list[Run]) -> None:
    for i, run in enumerate(runs):
        strategies = "+".join(run.summary.get("strategies") or ["?"])
        models = "+".join(run.summary.get("models") or ["?"])
        run.label = f"{strategies} · {models}"
        run.color = PALETTE[i % len(PALETTE)]
    labels = [run.label for run in runs]
    for run in runs:
        if labels.count(run.label) > 1:
            run.label += f" [{run.directory.name}]"

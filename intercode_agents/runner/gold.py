"""The gold replay: every selected task's gold answer through its env, to prove the envs and rewards.

A solved task scores 1.0. A corrupt one has a gold that fails by itself (outcome ``corrupt``: the env
said ``corrupt`` or ``gold_failed``, in either reward mode: a gold query with a syntax error, a gold
command that times out), which is a property of the data, not of the env. Anything else is a
failure: a reward below 1.0 or an env error that persisted after the retries, listed with the
reward's parts so the cause is visible.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from rich.console import Console

from intercode_agents.datasets import gold_splits
from intercode_agents.runner.config import EvalConfig
from intercode_agents.runner.eval import run_eval
from intercode_agents.spec import load_spec
from intercode_agents.trajectory import Trajectory, gold_cannot_run


@dataclass
class GoldResult:
    task_id: str
    reward: float | None
    outcome: str
    parts: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    duration_s: float = 0.0


@dataclass
class GoldReport:
    env: str
    reward_mode: str
    solved: list[GoldResult]
    failed: list[GoldResult]
    corrupt: list[GoldResult]
    wall_s: float
    concurrency: int
    engines: list[dict[str, Any]] = field(default_factory=list)  # each engine's state at the end
    engine_retries: int = 0  # attempts that ended in an env error and were played again
    nodes: list[dict[str, Any]] = field(default_factory=list)  # on Ray: each node's state at the end

    @property
    def total(self) -> int:
        return len(self.solved) + len(self.failed) + len(self.corrupt)

    @property
    def episodes_per_s(self) -> float:
        return self.total / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def ok(self) -> bool:
        return not self.failed

    def to_json(self) -> dict[str, Any]:
        return {
            "env": self.env,
            "reward_mode": self.reward_mode,
            "total": self.total,
            "n_solved": len(self.solved),
            "n_failed": len(self.failed),
            "n_corrupt": len(self.corrupt),
            "ok": self.ok,
            "wall_s": round(self.wall_s, 3),
            "episodes_per_s": round(self.episodes_per_s, 3),
            "concurrency": self.concurrency,
            "engines": self.engines,
            "engine_retries": self.engine_retries,
            "nodes": self.nodes,
            "solved": [asdict(r) for r in self.solved],
            "failed": [asdict(r) for r in self.failed],
            "corrupt": [asdict(r) for r in self.corrupt],
        }


def _result(traj: Trajectory) -> GoldResult:
    return GoldResult(traj.task_id, traj.reward, traj.outcome, traj.reward_parts, traj.error, traj.duration_s)


def classify(
    env: str, reward_mode: str, records: list[Trajectory], wall_s: float, concurrency: int
) -> GoldReport:
    solved, failed, corrupt = [], [], []
    for traj in sorted(records, key=lambda t: _natural_key(t.task_id)):
        if traj.outcome == "corrupt" or gold_cannot_run(traj.reward_parts):
            corrupt.append(_result(traj))
        elif traj.solved:
            solved.append(_result(traj))
        else:
            failed.append(_result(traj))
    return GoldReport(env, reward_mode, solved, failed, corrupt, wall_s, concurrency)


def _natural_key(task_id: str) -> list[Any]:
    """``ctf/9`` before ``ctf/10``; text and numbers alternate, so ids of any depth compare."""
    return [int(part) if index % 2 else part for index, part in enumerate(re.split(r"(\d+)", task_id))]


async def run_gold(config: EvalConfig, *, console: Console | None = None) -> GoldReport:
    """Replay the gold of the tasks ``config`` selects (default: the env YAML's ``tasks.gold`` splits;
    for ours the InterCode set, for Bash the four file systems and the test split). The model is the
    gold policy whatever ``config`` says. Records go to ``config.out_dir`` when given, else to a
    temporary directory that is removed afterwards."""
    chosen = config.selector or ",".join(gold_splits(config.env))
    with tempfile.TemporaryDirectory(prefix="intercode-gold-") as scratch:
        out = config.out_dir or Path(scratch) / "run"
        gold = replace(config, model="gold", strategy=None, agent=None, selector=chosen, out_dir=out)
        result = await run_eval(gold, console=console)
    report = classify(
        load_spec(config.env).name, config.reward, result.records, result.wall_s, config.concurrency
    )
    report.engines, report.engine_retries, report.nodes = result.engines, result.engine_retries, result.nodes
    return report

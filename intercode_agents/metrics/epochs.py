"""Metrics over several samples per task (``--epochs K``): pass@k, mean@k and the per-task spread.

Only scored episodes count (see :mod:`.metrics`); a task's samples are its scored episodes, whatever
their epoch. For a task with n samples of which c are solved:

- pass@k = 1 - C(n-c, k) / C(n, k), the unbiased estimator of the chance that at least one of k
  samples drawn without replacement is solved (Chen et al., 2021); defined for k <= n, so a task with
  fewer than k samples is left out of pass@k (and counted in ``left_out``);
- mean@k is the mean over tasks of c / n (each task weighs the same, whatever its number of samples),
  and the same for the mean reward (a missing reward is 0);
- the spread is each task's solved count and the population standard deviation of its rewards, and
  how many tasks were solved in every sample, in some, and in none.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from math import comb
from typing import Any

from intercode_agents.errors import ConfigError
from intercode_agents.trajectory import Trajectory


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k of a task with ``n`` samples, ``c`` of them solved (1 <= k <= n)."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ConfigError(f"pass@k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def epochs_block(scored: list[Trajectory], epochs: int | None = None) -> dict[str, Any]:
    """The ``epochs`` block of ``summary.json`` from the scored episodes of a run.

    ``epochs`` is the run's K (its plan); without it, the highest epoch among the records.
    """
    samples: dict[tuple[str, str], list[Trajectory]] = defaultdict(list)
    for traj in scored:
        samples[(traj.env, traj.task_id)].append(traj)
    k_max = epochs or max((t.epoch for t in scored), default=1)
    per_task: list[dict[str, Any]] = []
    for (env, task_id), trajs in sorted(samples.items()):
        trajs = sorted(trajs, key=lambda t: t.epoch)
        rewards = [t.reward or 0.0 for t in trajs]
        per_task.append(
            {
                "env": env,
                "task_id": task_id,
                "n": len(trajs),
                "solved": sum(t.solved for t in trajs),
                "epochs": [t.epoch for t in trajs],
                "rewards": rewards,
                "reward_std": statistics.pstdev(rewards) if len(rewards) > 1 else 0.0,
            }
        )
    pass_at: dict[str, dict[str, Any]] = {}
    for k in range(1, k_max + 1):
        pool = [task for task in per_task if task["n"] >= k]
        values = [pass_at_k(task["n"], task["solved"], k) for task in pool]
        pass_at[str(k)] = {"value": _mean(values), "tasks": len(pool), "left_out": len(per_task) - len(pool)}
    solved_share = [task["solved"] / task["n"] for task in per_task]
    return {
        "k": k_max,
        "tasks": len(per_task),
        "pass_at_k": pass_at,
        "mean_at_k": {
            "success": _mean(solved_share),
            "reward": _mean([sum(task["rewards"]) / task["n"] for task in per_task]),
        },
        "spread": {
            "always_solved": sum(task["solved"] == task["n"] for task in per_task),
            "sometimes_solved": sum(0 < task["solved"] < task["n"] for task in per_task),
            "never_solved": sum(task["solved"] == 0 for task in per_task),
            "mean_reward_std": _mean([task["reward_std"] for task in per_task]),
        },
        "per_task": per_task,
    }

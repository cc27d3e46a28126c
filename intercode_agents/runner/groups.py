"""Groups of rollouts: k episodes of one task played at once, returned together.

GRPO and its kin score each sample against the others drawn for the same prompt, so a trainer asks
for a group: one task, k samples, k rewards. :func:`play_group` plays them concurrently, each in a
sandbox of its own taken from the warm pools the envs of one event loop share (an agent's sandbox is
always one nobody used), and returns the k trajectories in sample order. Sample ``i`` (1-based) is
the record's ``epoch`` and is played with seed ``seed + i - 1``, so a model that takes a seed (the
local model does) draws k different samples even when it is deterministic per seed; the group's
records are keyed like a run's epochs, ``(task_id, epoch)``.

It is the one call the scale-out work's Ray actor needs for whole groups (``await play_group(...)``
inside the actor's loop); a trainer that drives each step itself uses
:class:`~intercode_agents.runner.rollout.Rollout` instead. Pass ``envs`` (at least ``k`` of them,
started) to keep their pools warm from one group to the next; without them the group makes its envs
and closes them at the end, which removes every container it made.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from intercode_agents.datasets import get_task
from intercode_agents.envs import Env
from intercode_agents.errors import ConfigError
from intercode_agents.runner.players import Player
from intercode_agents.runner.retries import NO_RETRIES, RetryPolicy
from intercode_agents.runner.workers import Episode, run_episodes
from intercode_agents.trajectory import Trajectory


async def play_group(
    env: str | Path,
    task_id: str,
    k: int,
    player: Player,
    *,
    seed: int = 0,
    env_options: dict[str, Any] | None = None,
    envs: Sequence[Env] | None = None,
    retry: RetryPolicy = NO_RETRIES,
) -> list[Trajectory]:
    """Play ``k`` episodes of ``task_id`` on ``env`` with ``player``, all at once, and return their
    trajectories in sample order (see the module docstring). Env and model failures are the
    records' outcomes (retried as ``retry`` says), never exceptions; a bad argument raises."""
    if not isinstance(k, int) or k < 1:
        raise ConfigError(f"a group has at least one episode, got k={k!r}")
    if envs is not None and len(envs) < k:
        raise ConfigError(f"a group of {k} needs {k} envs to play at once, got {len(envs)}")
    data_root = (env_options or {}).get("data_root")
    task = await asyncio.to_thread(get_task, task_id, data_root=data_root)
    if task.unavailable:
        raise ConfigError(f"task {task.id} cannot run here: {task.unavailable}")
    episodes = [Episode(task, seed=seed + i, epoch=i + 1) for i in range(k)]
    played = await run_episodes(
        str(env), episodes, player, concurrency=k, env_options=env_options, envs=envs, retry=retry
    )
    return sorted(played, key=lambda traj: traj.epoch)

"""Replay recorded episodes: run their actions again in fresh envs and compare the rewards.

Each record's actions (steps that reached the env; replies the parser rejected never did) run on a
pristine env of the same kind, reward mode and execution mode, and the new reward is compared with
the recorded one. A change means the episode does not reproduce: a nondeterministic action
(``date``, ``$RANDOM``), an env or reward that changed since, or an edited record. Records without a
reward (env or model errors, timeouts before a submit) are skipped.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from intercode_agents.datasets import get_task
from intercode_agents.errors import ConfigError
from intercode_agents.runner.config import check_ray, ray_address
from intercode_agents.runner.direct import replayable_actions
from intercode_agents.runner.players import ScriptPlayer
from intercode_agents.runner.preflight import image_ids
from intercode_agents.runner.progress import RunProgress
from intercode_agents.runner.run_dir import RUN_JSON, read_records
from intercode_agents.runner.workers import Episode, run_episodes
from intercode_agents.sandbox import resolve_engines
from intercode_agents.spec import load_spec
from intercode_agents.trajectory import Trajectory

if TYPE_CHECKING:
    from intercode_agents.runner.ray.driver import RayRun

TOLERANCE = 1e-6


@dataclass
class ReplayedEpisode:
    task_id: str
    env: str
    seed: int | None
    recorded: float | None
    replayed: float | None
    recorded_parts: dict[str, Any] = field(default_factory=dict)
    replayed_parts: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    @property
    def changed(self) -> bool:
        if self.recorded is None or self.replayed is None:
            return self.recorded != self.replayed
        return abs(self.recorded - self.replayed) > TOLERANCE


@dataclass
class ReplayReport:
    episodes: list[ReplayedEpisode]
    skipped: list[tuple[str, str]]  # (task id, why)
    wall_s: float

    @property
    def changed(self) -> list[ReplayedEpisode]:
        return [e for e in self.episodes if e.changed]


def _load(path: Path) -> list[Trajectory]:
    if not path.is_file():
        raise ConfigError(f"no such trajectory file: {path}")
    records, _ = read_records(path)
    if not records:
        raise ConfigError(f"{path} holds no trajectory records")
    return records


def _load_user_env(run_json: Path) -> None:
    """Make a user env's records replayable in a new process: its run names the env's YAML."""
    try:
        definition = json.loads(run_json.read_text(encoding="utf-8")).get("env_definition")
    except (OSError, ValueError, AttributeError):
        return
    if isinstance(definition, str):
        load_spec(definition)


async def replay_file(
    path: str | Path,
    *,
    concurrency: int = 4,
    progress: bool = True,
    console: Console | None = None,
    engines: Any = None,
    ray: str | bool | None = None,
) -> ReplayReport:
    """Replay every scored record of ``path`` (a ``trajectories.jsonl``) and compare the rewards.
    ``engines``: where the sandboxes run (see :func:`~intercode_agents.sandbox.resolve_engines`);
    ``ray``: on a Ray cluster instead (see :class:`~intercode_agents.runner.config.EvalConfig`)."""
    if concurrency < 1:
        raise ConfigError(f"--concurrency must be at least 1, got {concurrency}")
    check_ray(ray, engines)
    address = ray_address(ray)
    if address is None:
        return await _replay(path, concurrency, progress, console, engines, None)
    from intercode_agents.runner.ray.driver import open_ray

    async with open_ray(address, console=console) as cluster:
        return await _replay(path, concurrency, progress, console, None, cluster)


async def _replay(
    path: str | Path,
    concurrency: int,
    progress: bool,
    console: Console | None,
    engines: Any,
    cluster: RayRun | None,
) -> ReplayReport:
    records = _load(Path(path))
    _load_user_env(Path(path).parent / RUN_JSON)
    skipped = [(r.task_id, f"no reward recorded (outcome {r.outcome})") for r in records if r.reward is None]
    playable = [r for r in records if r.reward is not None]
    groups: dict[tuple[str, str, str], list[Trajectory]] = defaultdict(list)
    for record in playable:
        groups[(record.env, record.reward_mode, record.execution)].append(record)
    tasks = {r.task_id: get_task(r.task_id) for r in playable}
    options: dict[str, Any] = {}
    ids: dict[str, str] = {}
    if cluster is None:  # (on Ray, every node checks its images before it plays)
        options["backend"] = resolve_engines(engines)
        ids = await image_ids(tasks.values(), engines=options["backend"])

    episodes: list[ReplayedEpisode] = []
    started = time.perf_counter()
    with RunProgress(len(playable), label="replay", console=console, enabled=progress) as bar:
        for (env_name, reward_mode, execution), group in groups.items():
            # One script per task id; a file with a task twice replays each record on its own pass.
            for batch in _unique_batches(group):
                recorded = {r.task_id: r for r in batch}
                player = ScriptPlayer({r.task_id: replayable_actions(r) for r in batch})
                replays = await run_episodes(
                    env_name,
                    [Episode(tasks[r.task_id], r.seed) for r in batch],
                    player,
                    concurrency=concurrency,
                    env_options={"reward": reward_mode, "execution": execution, **options},
                    image_ids=ids,
                    on_done=bar.advance,
                    ray=cluster,
                )
                for new in replays:
                    episodes.append(_compare(recorded[new.task_id], new))
    return ReplayReport(episodes, skipped, time.perf_counter() - started)


def _unique_batches(group: list[Trajectory]) -> list[list[Trajectory]]:
    batches: list[list[Trajectory]] = []
    for record in group:
        for batch in batches:
            if all(r.task_id != record.task_id for r in batch):
                batch.append(record)
                break
        else:
            batches.append([record])
    return batches


def _compare(old: Trajectory, new: Trajectory) -> ReplayedEpisode:
    return ReplayedEpisode(
        task_id=old.task_id,
        env=old.env,
        seed=old.seed,
        recorded=old.reward,
        replayed=new.reward,
        recorded_parts=old.reward_parts,
        replayed_parts=new.reward_parts,
        error=new.error if new.outcome == "env_error" else None,
    )

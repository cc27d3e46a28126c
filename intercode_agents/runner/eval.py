"""The evaluation engine: many episodes of one env, concurrently, recorded to a run directory.

Example::

    result = await run_eval(EvalConfig(env="bash", strategy="react", model="openai:gpt-4o-mini",
                                       selector="test", concurrency=4, out_dir=Path("runs/react-mini")))
    print(result.summary["success_rate"])

The settings are one :class:`~intercode_agents.runner.config.EvalConfig` (what each field means is
said there). The runner resolves its strings once, here: the env's definition, the tasks, the player
(a strategy with a chat model, a user's agent, the gold policy or a person) and the engines; what is
below gets objects. See :mod:`intercode_agents.runner.run_dir` for the files.

``max_cost_usd`` caps the cost of the whole run (all its sessions): once the records reach it no new
episode starts, the episodes in flight finish, and the run can be resumed with a higher cap.

One process writes a run directory at a time (:mod:`.run_lock`). A resume counts the records by the
rules of :mod:`.run_records` (duplicates and foreign records are reported and ignored) and plays the
planned episodes that have none; with ``retry_errors`` given it also plays again the recorded ones
that ended in an env or model error. Episodes ending in such an error are retried within the run
(:mod:`.retries`) before they are recorded.
"""

from __future__ import annotations

import datetime as dt
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import Progress

from intercode_agents import __version__
from intercode_agents.datasets import Task, select_tasks
from intercode_agents.errors import ConfigError
from intercode_agents.metrics.summary import summarize
from intercode_agents.paths import data_dir
from intercode_agents.runner.config import EvalConfig
from intercode_agents.runner.players import GoldPlayer, HumanPlayer, Player, StrategyPlayer, make_player
from intercode_agents.runner.preflight import image_ids, load_local_model
from intercode_agents.runner.progress import RunProgress
from intercode_agents.runner.retries import NO_RETRIES, RetryPolicy
from intercode_agents.runner.run_cost import RunSpend
from intercode_agents.runner.run_dir import (
    RUN_JSON,
    SUMMARY,
    TRAJECTORIES,
    RecordWriter,
    read_run_settings,
    settings_mismatch,
    write_json,
)
from intercode_agents.runner.run_lock import RunLock
from intercode_agents.runner.run_records import (
    IgnoredRecord,
    RunPlan,
    RunRecords,
    episode_key,
    epoch_seed,
    read_run_records,
)
from intercode_agents.runner.workers import Episode, run_episodes
from intercode_agents.sandbox import RUN_ID, EngineSet, resolve_engines
from intercode_agents.spec import load_spec
from intercode_agents.strategies.budget import price_of
from intercode_agents.trajectory import RETRYABLE_OUTCOMES, FailedAttempt, Trajectory

if TYPE_CHECKING:
    from intercode_agents.runner.ray.driver import RayRun


@dataclass
class EvalResult:
    """What a run did: its directory, metrics and records (those of earlier sessions included)."""

    out_dir: Path
    summary: dict[str, Any]
    records: list[Trajectory]
    new_episodes: int
    resumed_episodes: int
    wall_s: float
    ignored: list[IgnoredRecord] = field(default_factory=list)  # records of the directory not counted
    replayed_errors: int = 0  # recorded env/model errors played again (``retry_errors`` on a resume)
    lock_taken_over: str | None = None  # the holder a killed process left in run.lock
    stopped: str | None = None  # why the run stopped before playing every episode (the cost cap)
    engines: list[dict[str, Any]] = field(default_factory=list)  # each engine's state at the end
    nodes: list[dict[str, Any]] = field(default_factory=list)  # on Ray: each node's state at the end

    @property
    def engine_retries(self) -> int:
        """Attempts of this session's episodes that ended in an env error and were played again."""
        return sum(sum(1 for r in t.retries if r.outcome == "env_error") for t in self.records)

    @property
    def episodes_per_s(self) -> float:
        return self.new_episodes / self.wall_s if self.wall_s > 0 else 0.0


def choose_tasks(env_name: str, selector: str | None, limit: int | None) -> list[Task]:
    load_spec(env_name)  # an unknown env is a ConfigError naming the known ones
    tasks = select_tasks(env_name, selector)
    if not tasks:
        raise ConfigError(f"the selector {selector!r} picks no available {env_name} task")
    return tasks[:limit] if limit else tasks


def default_out_dir(env_name: str, strategy: str, model: str, root: Path = Path("runs")) -> Path:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", f"{env_name}-{strategy}-{model}").strip("-")
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = root / f"{slug}-{stamp}"
    n = 1
    while path.exists():
        n += 1
        path = root / f"{slug}-{stamp}-{n}"
    return path


def _open_run_dir(out_dir: Path, settings: dict[str, Any], plan: RunPlan, resume: bool) -> RunRecords:
    """Prepare ``out_dir`` (its lock is held); return the records of earlier sessions that count."""
    records_path = out_dir / TRAJECTORIES
    if resume:
        saved = read_run_settings(out_dir)
        problems = settings_mismatch(saved, settings)
        if problems:
            raise ConfigError(
                f"cannot resume {out_dir}: the settings differ from its {RUN_JSON} ("
                + "; ".join(problems)
                + "). Resume with the original settings, or start a new run with another --out."
            )
        previous = read_run_records(records_path, plan)
        saved["resumed_at"] = [*saved.get("resumed_at", []), settings["created_at"]]
        for key in ("concurrency", "retry_errors", "max_cost_usd", "ray", "sandbox_run_id"):
            saved[key] = settings[key]
        write_json(out_dir / RUN_JSON, saved)
        return previous
    if records_path.is_file() and records_path.stat().st_size:
        raise ConfigError(
            f"{out_dir} already holds records: pass --resume to continue that run, or choose another --out"
        )
    write_json(out_dir / RUN_JSON, settings)
    return RunRecords()


def _episodes(
    plan: RunPlan, tasks: list[Task], previous: RunRecords, replay_errors: bool
) -> tuple[list[Episode], list[Trajectory]]:
    """The episodes to play (planned ones without a record, then recorded errors to play again when
    ``replay_errors``) and the earlier records that stand."""
    by_id = {task.id: task for task in tasks}
    todo, kept = [], []
    for task_id, epoch in plan.keys():
        seed = epoch_seed(plan.seed, epoch)
        recorded = previous.accepted.get((task_id, epoch))
        if recorded is None:
            todo.append(Episode(by_id[task_id], seed, epoch))
        elif replay_errors and recorded.outcome in RETRYABLE_OUTCOMES:
            earlier = (*recorded.retries, FailedAttempt.of(recorded))
            todo.append(Episode(by_id[task_id], seed, epoch, earlier))
        else:
            kept.append(recorded)
    return todo, kept


def _warn_ignored(console: Console, path: Path, ignored: list[IgnoredRecord]) -> None:
    if ignored:
        console.print(
            f"[yellow]warning:[/] {len(ignored)} record(s) of {path} are not counted:", highlight=False
        )
        for item in ignored:
            console.print(f"  {item.describe()}", highlight=False, soft_wrap=True)


#: Called with the run directory and each record as it is written (``eval --atif`` writes ATIF files so).
RecordHook = Callable[[Path, Trajectory], None]


async def run_eval(
    config: EvalConfig,
    *,
    console: Console | None = None,
    progress_display: Progress | None = None,
    on_record: RecordHook | None = None,
) -> EvalResult:
    """Run (or resume) an evaluation and write ``run.json``, ``trajectories.jsonl`` and ``summary.json``.

    Cancelling the run (Ctrl-C) keeps every finished episode on disk and removes the containers; run
    it again with ``resume=True`` and the same settings to finish the remaining tasks. A second
    process on the same ``out_dir`` raises :class:`~intercode_agents.runner.run_lock.RunDirectoryBusy`.
    With several engines each episode is placed on the engine with the most free capacity, and an
    episode whose engine died is an env error, played again on the others. With ``config.ray`` the
    nodes of a Ray cluster play the episodes, each on its own engines, and this process writes the
    records (:mod:`intercode_agents.runner.ray`); a node lost mid-run is handled as a dead engine
    is. ``console`` and ``progress_display`` only change how the run is shown; ``on_record`` is given
    each new record once it is on disk (a failure there stops the run; the records written stay).
    """
    policy = RetryPolicy.from_option(config.retry_errors, wait_s=config.retry_wait_s)
    spec = load_spec(config.env)  # a user's env YAML path: the run and its records use the env's name
    env_name = spec.name
    check_execution(env_name, config.execution)
    tasks = choose_tasks(env_name, config.selector, config.limit)
    budgets = config.budgets
    player, chat = make_player(
        config.model,
        config.strategy,
        turns=config.turns,
        agent=config.agent,
        strategy_settings={**config.strategy_settings, **budgets.strategy_settings()},
        model_settings=config.model_settings,
    )
    if not isinstance(player, StrategyPlayer) and (budgets.any() or budgets.show):
        raise ConfigError(f"episode budgets apply to episodes a model plays, not to --model {player.model}")
    concurrency, progress = config.concurrency, config.progress
    if isinstance(player, HumanPlayer):
        concurrency, progress, policy = 1, False, NO_RETRIES  # a person is not asked twice
    seed = config.epoch_seed
    if config.max_cost_usd is not None and isinstance(player, StrategyPlayer):
        price_of(player.model)  # a cost cap needs the model's price: a clear error now, not at the end
    out = config.out_dir or default_out_dir(env_name, player.strategy, player.model)
    budget = None if isinstance(player, GoldPlayer) else config.turns
    settings = _settings(
        env_name, tasks, player, config.selector, config.limit, config.turns, config.reward, seed, concurrency
    )
    settings |= {
        "epochs": config.epochs,
        "turn_budget": budget,
        "retry_errors": policy.to_json(),
        "model_options": dict(config.model_settings),
        "max_cost_usd": config.max_cost_usd,
        "execution": config.execution,
        "ray": None,  # the address of the Ray cluster that played the session (runner/ray)
    }
    if config.agent:
        assert isinstance(player, StrategyPlayer)  # an agent plays as a strategy (make_player)
        settings["agent"] = player.runner.context()["agent"]
    if spec.path.parent != data_dir("envs"):
        settings["env_definition"] = str(spec.path)  # a user's env: where its YAML is
    plan = RunPlan.from_settings(settings)
    options: dict[str, Any] = {"reward": plan.reward_mode, "execution": config.execution}

    async def play(session: _Session) -> EvalResult:
        session.max_cost_usd, session.progress_display = config.max_cost_usd, progress_display
        session.on_record = on_record
        with RunLock(out) as lock:
            return await session.run(
                lock,
                resume=config.resume,
                replay_errors=config.resume and config.retry_errors is not None,
                progress=progress,
                console=console,
            )

    address = config.ray_address
    if address is None:
        engine_set = resolve_engines(config.engines)
        ids = await image_ids(tasks, execution=config.execution, engines=engine_set)
        await load_local_model(chat)
        options["backend"] = engine_set
        return await play(_Session(out, settings, plan, tasks, player, policy, budget, ids, options))
    from intercode_agents.runner.ray.driver import open_ray, travelling

    travelling(player)  # a player that cannot go to the nodes is refused before any actor starts
    async with open_ray(address, console=console) as cluster:
        # Every node checks its images and builds the player before the run directory is touched.
        ids = await cluster.prepare(env_name, options, player, tasks, config.execution)
        settings |= {"ray": cluster.address, "sandbox_run_id": cluster.run_id}
        return await play(_Session(out, settings, plan, tasks, player, policy, budget, ids, options, cluster))


@dataclass
class _Session:
    """One session of a run: what it plays, and how, once its arguments are checked."""

    out: Path
    settings: dict[str, Any]
    plan: RunPlan
    tasks: list[Task]
    player: Player
    policy: RetryPolicy
    turn_budget: int | None
    image_ids: dict[str, str]
    env_options: dict[str, Any]  # make_env's: reward, execution, and the engines of a local run
    ray: RayRun | None = None  # the cluster that plays the episodes, or None for a local run
    max_cost_usd: float | None = None  # of the whole run, all sessions
    progress_display: Progress | None = None  # a display shared with other runs (several models)
    on_record: RecordHook | None = None  # told of each record once it is written

    async def run(
        self, lock: RunLock, *, resume: bool, replay_errors: bool, progress: bool, console: Console | None
    ) -> EvalResult:
        """Play the session with the directory's lock held."""
        out, plan, player = self.out, self.plan, self.player
        messages = console or Console(stderr=True)
        taken_over = lock.describe_taken_over()
        if taken_over:
            messages.print(f"note: took over the lock of {out} left by a process that is gone ({taken_over})")
        previous = _open_run_dir(out, self.settings, plan, resume)
        _warn_ignored(messages, out / TRAJECTORIES, previous.ignored)
        todo, kept = _episodes(plan, self.tasks, previous, replay_errors)

        started = time.perf_counter()
        new: list[Trajectory] = []
        label = f"{plan.env} · {player.strategy} · {player.model}"
        valid_length = previous.valid_length if resume else None
        spend = RunSpend(self.max_cost_usd, previous.records)
        with (
            RecordWriter(out / TRAJECTORIES, valid_length=valid_length) as writer,
            RunProgress(
                plan.size,
                previous=kept,
                label=label,
                console=console,
                enabled=progress,
                shared=self.progress_display,
            ) as bar,
        ):

            def on_done(traj: Trajectory) -> None:
                writer.write(traj)
                if self.on_record is not None:
                    self.on_record(out, traj)
                new.append(traj)
                spend.add(traj)
                bar.advance(traj)

            if todo and not spend.reached:
                await run_episodes(
                    plan.env,
                    todo,
                    player,
                    concurrency=self.settings["concurrency"],
                    env_options=self.env_options,
                    image_ids=self.image_ids,
                    on_done=on_done,
                    retry=self.policy,
                    keep_going=spend.allows_more,
                    ray=self.ray,
                )
        wall = time.perf_counter() - started
        final = dict(previous.accepted)
        final.update((episode_key(t), t) for t in new)
        records = list(final.values())
        ignored = previous.ignored_json()
        summary = summarize(
            records, turn_budget=self.turn_budget, planned=plan.size, ignored=ignored, epochs=plan.epochs
        )
        stopped = spend.stop_note(plan.size - len(final)) if spend.reached else None
        if stopped:
            summary["stopped"] = stopped
        write_json(out / SUMMARY, summary)
        replayed = len(todo) - (plan.size - len(previous.accepted))
        engines = self.env_options.get("backend")
        return EvalResult(
            out, summary, records, len(new), len(kept), wall, previous.ignored, replayed, taken_over,
            stopped, engines.describe() if isinstance(engines, EngineSet) else [],
            self.ray.describe() if self.ray is not None else [],
        )  # fmt: skip


def check_execution(env_name: str, execution: str) -> None:
    """A clear error for an execution mode the env does not have (SQL has no "paper" one)."""
    from intercode_agents.envs.registry import env_class

    modes = env_class(env_name).execution_modes
    if execution not in modes:
        raise ConfigError(f"the {env_name} env has no {execution!r} execution; it has {', '.join(modes)}")


def _settings(
    env_name: str,
    tasks: list[Task],
    player: Player,
    selector: str | None,
    limit: int | None,
    turns: int,
    reward: str,
    seed: int | None,
    concurrency: int,
) -> dict[str, Any]:
    strategy_settings: dict[str, Any] = {}
    model_settings: dict[str, Any] = {}
    if isinstance(player, StrategyPlayer):
        strategy_settings = player.runner.config.model_dump()
        from intercode_agents.models import describe_model
        from intercode_agents.strategies.base import NO_MODEL

        chat = player.chat_model
        model_settings = describe_model(chat)["settings"] if chat is not None else NO_MODEL["settings"]
    return {
        "env": env_name,
        "tasks": selector,
        "limit": limit,
        "task_ids": [task.id for task in tasks],
        "strategy": player.strategy,
        "strategy_settings": strategy_settings,
        "model": player.model,
        "model_settings": model_settings,
        "turns": turns,
        "reward": reward,
        "seed": seed,
        "concurrency": concurrency,
        "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "intercode_agents_version": __version__,
        "sandbox_run_id": RUN_ID,
    }

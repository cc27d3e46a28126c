"""The evaluation engine: many episodes of one env, concurrently, recorded to a run directory.

Example::

    result = await run_eval("bash", strategy="react", model="openai:gpt-4o-mini",
                            selector="test", concurrency=4, out_dir="runs/react-mini")
    print(result.summary["success_rate"])

``model`` is a model spec (``"local"``, ``"provider:model"``), a ``BaseChatModel``, or one of the
runner's own policies: ``"gold"`` (replays the gold answers; no strategy) and ``"human"`` (asks at
the terminal; one episode at a time). See :mod:`intercode_agents.runner.run_dir` for the files.
"""

from __future__ import annotations

import datetime as dt
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from rich.console import Console

from intercode_agents import __version__
from intercode_agents.datasets import Task, select_tasks
from intercode_agents.envs import REWARD_MODES, load_spec
from intercode_agents.errors import ConfigError
from intercode_agents.runner.metrics import summarize
from intercode_agents.runner.players import GoldPlayer, HumanPlayer, Player, StrategyPlayer
from intercode_agents.runner.preflight import image_ids, load_local_model
from intercode_agents.runner.progress import RunProgress
from intercode_agents.runner.run_dir import (
    RUN_JSON,
    SUMMARY,
    TRAJECTORIES,
    RecordWriter,
    read_records,
    read_run_settings,
    record_key,
    settings_mismatch,
    write_json,
)
from intercode_agents.runner.workers import Episode, run_episodes
from intercode_agents.sandbox import RUN_ID
from intercode_agents.trajectory import Trajectory

DEFAULT_TURNS = 10


@dataclass
class EvalResult:
    """What a run did: its directory, metrics and records (those of earlier sessions included)."""

    out_dir: Path
    summary: dict[str, Any]
    records: list[Trajectory]
    new_episodes: int
    resumed_episodes: int
    wall_s: float

    @property
    def episodes_per_s(self) -> float:
        return self.new_episodes / self.wall_s if self.wall_s > 0 else 0.0


def make_player(
    model: str | BaseChatModel,
    strategy: str | None,
    *,
    turns: int,
    seed: int | None,
    strategy_settings: dict[str, Any] | None = None,
) -> tuple[Player, Any]:
    """The player of a run and its chat model (None for gold and human)."""
    if isinstance(model, str) and model.strip() == "gold":
        return GoldPlayer(), None
    if isinstance(model, str) and model.strip() == "human":
        return HumanPlayer(max_turns=turns), None
    from intercode_agents.models import describe_model, resolve_model
    from intercode_agents.strategies import get_strategy

    if not strategy:
        raise ConfigError(
            "a chat model needs a strategy: pass --strategy try_again|react|plan_solve|tool_calling"
        )
    runner = get_strategy(strategy, max_turns=turns, **(strategy_settings or {}))
    is_local = isinstance(model, str) and (model.strip() == "local" or model.strip().startswith("local:"))
    chat = resolve_model(model, seed=seed) if is_local else resolve_model(model)
    return StrategyPlayer(runner, chat, describe_model(chat)["name"]), chat


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


def _check_numbers(limit: int | None, turns: int, concurrency: int) -> None:
    if limit is not None and limit < 1:
        raise ConfigError(f"--limit must be at least 1, got {limit}")
    if turns < 1:
        raise ConfigError(f"--turns must be at least 1, got {turns}")
    if concurrency < 1:
        raise ConfigError(f"--concurrency must be at least 1, got {concurrency}")


def _open_run_dir(
    out_dir: Path, settings: dict[str, Any], resume: bool
) -> tuple[list[Trajectory], int | None]:
    """Prepare ``out_dir``; return the records of earlier sessions and the length of their valid part."""
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
        records, valid_length = read_records(records_path)
        saved["resumed_at"] = [*saved.get("resumed_at", []), settings["created_at"]]
        saved["concurrency"] = settings["concurrency"]
        write_json(out_dir / RUN_JSON, saved)
        return records, valid_length
    if records_path.is_file() and records_path.stat().st_size:
        raise ConfigError(
            f"{out_dir} already holds records: pass --resume to continue that run, or choose another --out"
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    write_json(out_dir / RUN_JSON, settings)
    return [], None


async def run_eval(
    env_name: str,
    *,
    strategy: str | None = None,
    model: str | BaseChatModel = "gold",
    selector: str | None = None,
    limit: int | None = None,
    turns: int = DEFAULT_TURNS,
    concurrency: int = 1,
    reward: str = "intercode",
    execution: str = "session",
    out_dir: str | Path | None = None,
    resume: bool = False,
    seed: int | None = None,
    strategy_settings: dict[str, Any] | None = None,
    progress: bool = True,
    console: Console | None = None,
) -> EvalResult:
    """Run (or resume) an evaluation and write ``run.json``, ``trajectories.jsonl`` and ``summary.json``.

    Cancelling it (Ctrl-C) keeps every finished episode on disk and removes the containers; run it
    again with ``resume=True`` and the same settings to finish the remaining tasks. ``execution``
    "paper" runs Bash and CTF actions as the original InterCode ran them (see
    :mod:`intercode_agents.envs.paper_execution`), to compare with the paper's table like for like.
    """
    _check_numbers(limit, turns, concurrency)
    if reward not in REWARD_MODES:
        raise ConfigError(f"unknown reward mode {reward!r}; choose one of {', '.join(REWARD_MODES)}")
    check_execution(env_name, execution)
    tasks = choose_tasks(env_name, selector, limit)
    player, chat = make_player(model, strategy, turns=turns, seed=seed, strategy_settings=strategy_settings)
    if isinstance(player, HumanPlayer):
        concurrency, progress = 1, False
    if resume and out_dir is None:
        raise ConfigError("resume needs the run directory: pass --out DIR together with --resume")
    out = Path(out_dir) if out_dir is not None else default_out_dir(env_name, player.strategy, player.model)
    settings = _settings(env_name, tasks, player, selector, limit, turns, reward, seed, concurrency)
    settings["execution"] = execution

    ids = await image_ids(tasks, execution=execution)
    await load_local_model(chat)
    previous, valid_length = _open_run_dir(out, settings, resume)
    done = {record_key(t) for t in previous}
    todo = [Episode(task, seed) for task in tasks if (task.id, seed) not in done]

    started = time.perf_counter()
    new: list[Trajectory] = []
    label = f"{env_name} · {player.strategy} · {player.model}"
    with (
        RecordWriter(out / TRAJECTORIES, valid_length=valid_length) as writer,
        RunProgress(len(tasks), previous=previous, label=label, console=console, enabled=progress) as bar,
    ):

        def on_done(traj: Trajectory) -> None:
            writer.write(traj)
            new.append(traj)
            bar.advance(traj)

        if todo:
            await run_episodes(
                env_name,
                todo,
                player,
                concurrency=concurrency,
                env_options={"reward": reward, "execution": execution},
                image_ids=ids,
                on_done=on_done,
            )
    wall = time.perf_counter() - started
    records = previous + new
    budget = None if isinstance(player, GoldPlayer) else turns
    summary = summarize(records, turn_budget=budget)
    write_json(out / SUMMARY, summary)
    return EvalResult(out, summary, records, len(new), len(previous), wall)


def check_execution(env_name: str, execution: str) -> None:
    """A clear error for an execution mode the env does not have (only Bash and CTF have "paper")."""
    from intercode_agents.envs.registry import env_class

    modes = env_class(env_name).execution_modes
    if execution not in modes:
        raise ConfigError(
            f"the {env_name} env has no {execution!r} execution; it has {', '.join(modes)}"
            + (" (paper execution is for bash and ctf)" if execution == "paper" else "")
        )


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

        model_settings = describe_model(player.chat_model)["settings"]
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

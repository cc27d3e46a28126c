"""Trajectory files of the original InterCode harness: read, check, and match to this project's tasks.

A file is one JSON object keyed by task index; each entry holds ``task_id`` (the index of the task in
its dataset file), ``query``, ``turn_history`` (``actions``, ``observations``, ``rewards`` and, for
Bash and SQL, ``valid_action``) and ``summary`` (``max_reward``, ...). A task counts as solved when
``summary.max_reward == 1``. ``environment`` (``ic_bash``, ``ic_sql``, ``ic_python``, ``ic_ctf``) and
``dataset`` (the path of the dataset file) say which tasks the file is about.

The original's Try Again loop logged turns it never ran: a reply without code got the template's
retry message as its observation and reward 0, and a policy failure logged the action ``blocked``
with no observation. :attr:`LoggedTurn.executed` tells them apart.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from intercode_agents.datasets import Task, load_tasks
from intercode_agents.errors import ConfigError

ENVIRONMENTS = {"ic_bash": "bash", "ic_sql": "sql", "ic_python": "python", "ic_ctf": "ctf"}
DEFAULT_SPLIT = {"sql": "spider", "python": "mbpp", "ctf": "picoctf"}
_RETRY = re.compile(r"^No [\w ]+ code was found in your last response")
_BASH_DATASET = re.compile(r"nl2bash_fs_(\d+)")
FULL = 1.0 - 1e-6


class BadLog(ConfigError):
    """A trajectory file that is not in the original harness's format (or does not match the tasks)."""


@dataclass(frozen=True)
class LoggedTurn:
    action: str
    observation: str | None  # None: no observation was logged (a policy failure)
    reward: float
    executed: bool  # the original ran the action (not a retry message, not a policy failure)


@dataclass(frozen=True)
class LoggedEpisode:
    key: str  # the entry's key in the file
    index: int  # the task's index in its dataset file
    query: str
    turns: tuple[LoggedTurn, ...]
    max_reward: float
    final_info: dict[str, Any]  # the original's info of the last scoring (Bash: reward parts, eval_obs)

    @property
    def solved(self) -> bool:
        return self.max_reward >= FULL


@dataclass(frozen=True)
class PaperLog:
    path: Path
    env: str
    split: str
    episodes: tuple[LoggedEpisode, ...]

    @property
    def success_rate(self) -> float:
        return sum(e.solved for e in self.episodes) / len(self.episodes) if self.episodes else 0.0


def _target(entry: dict[str, Any], override: str | None, where: str) -> tuple[str, str]:
    if override:
        env, _, split = override.partition("/")
        if env not in ENVIRONMENTS.values():
            raise ConfigError(
                f"--env {override!r}: choose bash/fsN, bash/test, sql, sql/wikisql, python or ctf"
            )
        if not split:
            if env == "bash":
                raise ConfigError("--env bash needs its file system: bash/fs1, bash/fs2, ... or bash/test")
            split = DEFAULT_SPLIT[env]
        return env, split
    environment = entry.get("environment")
    env = ENVIRONMENTS.get(environment) if isinstance(environment, str) else None
    if env is None:
        raise BadLog(
            f"{where}: cannot tell the env from environment={environment!r} "
            f"(expected one of {', '.join(ENVIRONMENTS)}); pass --env"
        )
    dataset = str(entry.get("dataset") or "")
    if env == "bash":
        fs = _BASH_DATASET.search(dataset)
        if fs:
            return env, f"fs{fs.group(1)}"
        if "test_queries" in dataset:
            return env, "test"
        raise BadLog(
            f"{where}: cannot tell the Bash file system from dataset={dataset!r}; pass --env bash/fsN"
        )
    if env == "sql" and "wikisql" in dataset.lower():
        return env, "wikisql"
    return env, DEFAULT_SPLIT[env]


def _text(value: Any) -> str:
    if isinstance(value, list):  # the CTF harness logged some actions as a one-item list
        value = value[0] if value else ""
    return value if isinstance(value, str) else json.dumps(value)


def _turns(entry: dict[str, Any], where: str) -> tuple[LoggedTurn, ...]:
    history = entry.get("turn_history")
    if not isinstance(history, dict):
        raise BadLog(f"{where}: no turn_history object")
    actions, observations, rewards = (history.get(k) for k in ("actions", "observations", "rewards"))
    if not isinstance(actions, list) or not isinstance(observations, list) or not isinstance(rewards, list):
        raise BadLog(f"{where}: turn_history needs the lists actions, observations and rewards")
    if len(rewards) != len(actions) or len(observations) > len(actions):
        raise BadLog(
            f"{where}: {len(actions)} actions, {len(observations)} observations and {len(rewards)} rewards "
            "do not line up"
        )
    turns = []
    for i, (action, reward) in enumerate(zip(actions, rewards, strict=True)):
        if not isinstance(reward, int | float) or isinstance(reward, bool):
            raise BadLog(f"{where}: reward #{i} is {reward!r}, not a number")
        observation = _text(observations[i]) if i < len(observations) else None
        executed = observation is not None and not _RETRY.match(observation)
        turns.append(LoggedTurn(_text(action), observation, float(reward), executed))
    return tuple(turns)


def _episode(key: str, entry: Any, where: str) -> LoggedEpisode:
    if not isinstance(entry, dict):
        raise BadLog(f"{where}: an entry must be an object, not {type(entry).__name__}")
    index, query = entry.get("task_id"), entry.get("query")
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        raise BadLog(f"{where}: task_id must be the task's index (an integer), not {index!r}")
    if not isinstance(query, str):
        raise BadLog(f"{where}: no query text")
    turns = _turns(entry, where)
    summary = entry.get("summary")
    max_reward = summary.get("max_reward") if isinstance(summary, dict) else None
    if not isinstance(max_reward, int | float):
        max_reward = max((t.reward for t in turns), default=0.0)
    info = entry.get("info")
    return LoggedEpisode(key, index, query, turns, float(max_reward), info if isinstance(info, dict) else {})


def read_log(path: str | Path, *, env: str | None = None) -> PaperLog:
    """Read and check one trajectory file; ``env`` ("bash/fs1", "sql", ...) overrides the detection."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"no such trajectory file: {path}") from None
    except IsADirectoryError:
        raise ConfigError(f"{path} is a folder; give the trajectory files themselves") from None
    except UnicodeDecodeError as exc:
        raise BadLog(f"{path} is not UTF-8 text: {exc}") from None
    except json.JSONDecodeError as exc:
        raise BadLog(f"{path} is not JSON: {exc}") from None
    if not isinstance(raw, dict) or not raw:
        kind = "an empty object" if raw == {} else type(raw).__name__
        raise BadLog(
            f"{path}: expected an InterCode trajectory file (an object keyed by task index), got {kind}"
        )
    episodes = tuple(_episode(str(k), v, f"{path} entry {k!r}") for k, v in raw.items())
    first_key = next(iter(raw))
    env_name, split = _target(raw[first_key], env, f"{path} entry {first_key!r}")
    return PaperLog(path, env_name, split, episodes)


def match_tasks(log: PaperLog, *, data_root: str | Path | None = None) -> list[Task]:
    """The task of each episode (by its index in the split), checked by the query text."""
    split = [t for t in load_tasks(log.env, data_root=data_root) if t.split == log.split]
    if not split:
        raise ConfigError(f"the {log.env} env has no split {log.split!r}")
    tasks = []
    for episode in log.episodes:
        where = f"{log.path} entry {episode.key!r}"
        if episode.index >= len(split):
            raise BadLog(
                f"{where}: task index {episode.index} is past the {len(split)} tasks of "
                f"{log.env}/{log.split}; is this file of another split? (--env)"
            )
        task = split[episode.index]
        if " ".join(task.query.split()) != " ".join(episode.query.split()):
            raise BadLog(
                f"{where}: its query differs from task {task.id}'s ({episode.query[:60]!r} vs "
                f"{task.query[:60]!r}); is this file of another split? (--env)"
            )
        tasks.append(task)
    return tasks

"""Replay the model replies of the paper's ReAct and Plan & Solve logs through our strategies.

The check behind ``--set prompts=paper``: a scripted chat model answers with an entry's logged replies,
our ``react`` or ``plan_solve`` strategy runs them with the paper prompt set against a real env (SQL,
or Bash with ``execution="paper"``), and the actions it ran and its success are compared with the
log's. Used by ``benchmarks/replay_paper_strategies.py`` and ``tests/strategies/test_strategies_paper.py``.

The logs keep what the original's loops made of each reply, not always the reply itself, so the
replies are rebuilt from them:

- **ReAct** entries keep each turn's ``thoughts`` and ``actions`` (the action as the model wrote it,
  ``execute[...]`` or ``submit``), so the reply is ``<thought>\\nAction N: <action>``; a thought the
  original could only have got from its second call (no ``Action N:`` line) is replied alone and
  the action follows as the second reply. A last turn with the thought ``EXCEEDED MAX TURNS: submit``
  is the loop's own submit at the turn limit, not a reply.
- **Plan & Solve** files wrap entries as ``{"meta": ..., "logs": ...}`` (the Bash fs_1 file does not)
  and keep the plan's ``steps`` and each step's ``actions`` as the original parsed them: the plan
  reply is the numbered steps, and a step's reply is its logged action, or the action in a fence
  where the paper's parse would otherwise read the bare text differently. So for Plan & Solve the
  replay checks the loop and the scores; the parse is checked by the ReAct logs, which keep the
  replies as written. A log whose actions hold fences ran its replies as written (Bash fs_1).

The reader is deliberately small; the paper's Try Again logs are read by :mod:`.paper_log`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from intercode_agents.datasets import Task, get_task
from intercode_agents.envs import Env
from intercode_agents.errors import ConfigError
from intercode_agents.models.scripted import ScriptedChatModel
from intercode_agents.runner.workers import Episode, run_episodes
from intercode_agents.strategies import Strategy, get_strategy
from intercode_agents.strategies.episode import FORCED_SUBMIT
from intercode_agents.strategies.paper_loops import SOLVED_NOTE
from intercode_agents.strategies.paper_parsing import FENCE, react_code, react_split, step_code
from intercode_agents.trajectory import Trajectory

StrategyName = Literal["react", "plan_solve"]
EXCEEDED = "EXCEEDED MAX TURNS: submit"  # the thought of the ReAct loop's own submit at the turn limit
_NO_CODE = re.compile(
    r"^(?:Error executing query: Your last `execute` action did not contain|No \w+ code was found)"
)
_ENVS = {"ic_bash": "bash", "ic_sql": "sql"}
_FS = re.compile(r"nl2bash_fs_(\d+)")
FULL = 1.0 - 1e-6
SCORE_TOLERANCE = 0.01


@dataclass(frozen=True)
class LoggedTurn:
    action: str  # as logged: ReAct's as the model wrote it, Plan & Solve's as the original parsed it
    observation: str
    reward: float
    thought: str | None = None  # ReAct

    @property
    def ran(self) -> bool:
        """Whether the original ran it (a reply without code got a message instead)."""
        return not _NO_CODE.match(self.observation)


@dataclass(frozen=True)
class LoggedEntry:
    key: str
    index: int  # the task's index in its dataset file
    query: str
    turns: tuple[LoggedTurn, ...]
    plan: tuple[str, ...]  # Plan & Solve's steps
    max_reward: float

    @property
    def solved(self) -> bool:
        return self.max_reward >= FULL


@dataclass(frozen=True)
class StrategyLog:
    path: Path
    strategy: StrategyName
    env: str
    split: str
    max_turns: int  # ReAct's turn limit; Plan & Solve: its longest episode (the original had none)
    refine_turns: int
    as_written: bool  # Plan & Solve replies that ran as written (the log's actions hold fences)
    entries: tuple[LoggedEntry, ...]

    def task_id(self, entry: LoggedEntry) -> str:
        return f"{self.env}/{self.split}/{entry.index}"

    def settings(self) -> dict[str, Any]:
        """The strategy settings that replay this log's runs."""
        settings: dict[str, Any] = {"prompts": "paper", "max_turns": self.max_turns}
        if self.strategy == "plan_solve":
            settings |= {"refine_turns": self.refine_turns, "run_replies_as_written": self.as_written}
        return settings

    def env_options(self) -> dict[str, Any]:
        return {"reward": "intercode"} | ({"execution": "paper"} if self.env == "bash" else {})


def read_strategy_log(path: str | Path) -> StrategyLog:
    """Read a ReAct or Plan & Solve log of the paper; anything else is a ConfigError."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    meta = data.get("meta", {}) if isinstance(data, dict) else {}
    raw = data.get("logs", data) if isinstance(data, dict) else None
    if not isinstance(raw, dict) or not raw:
        raise ConfigError(f"{path}: not a log of the paper (an object keyed by task index)")
    try:
        first = next(iter(raw.values()))
        history = first["turn_history"]
        strategy: StrategyName = "react" if "thoughts" in history else "plan_solve"
        if strategy == "plan_solve" and "steps" not in history:
            raise ConfigError(
                f"{path}: not a ReAct or Plan & Solve log of the paper (its turns have no thoughts or steps)"
            )
        env = _ENVS[first["environment"]]
        fs = _FS.search(str(first.get("dataset", "")))
        split = f"fs{fs.group(1)}" if env == "bash" and fs else "spider"
        entries = tuple(_entry(key, value, strategy) for key, value in raw.items())
        turns_max = int(first.get("summary", {}).get("turns_max") or 0)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ConfigError(f"{path}: not a ReAct or Plan & Solve log of the paper ({exc!r})") from exc
    longest = max((len(e.turns) for e in entries), default=1)
    return StrategyLog(
        path=path,
        strategy=strategy,
        env=env,
        split=split,
        max_turns=turns_max if strategy == "react" else max(longest, 1),
        refine_turns=int(meta.get("refine_turns") or 0) if meta.get("refine") else 0,
        as_written=any(t.action.lstrip().startswith(FENCE) for e in entries for t in e.turns),
        entries=entries,
    )


def _entry(key: str, value: dict[str, Any], strategy: StrategyName) -> LoggedEntry:
    history = value["turn_history"]
    thoughts = history.get("thoughts") or [None] * len(history["actions"])
    turns = tuple(
        LoggedTurn(str(action), str(observation), float(reward), thought)
        for action, observation, reward, thought in zip(
            history["actions"], history["observations"], history["rewards"], thoughts, strict=False
        )
    )
    return LoggedEntry(
        key=key,
        index=int(value["task_id"]),
        query=str(value["query"]),
        turns=turns,
        plan=tuple(history.get("steps") or ()) if strategy == "plan_solve" else (),
        max_reward=float(value["summary"]["max_reward"]),
    )


# -- the replies and the actions of an entry ------------------------------------------------------
def logged_replies(log: StrategyLog, entry: LoggedEntry) -> list[str]:
    """The model's replies of ``entry``, in the order our strategy asks for them."""
    if log.strategy == "react":
        replies: list[str] = []
        for number, turn in enumerate(model_turns(log, entry), start=1):
            thought = turn.thought or ""
            whole = f"{thought}\nAction {number}: {turn.action}"
            if react_split(whole, number) == (thought, turn.action):
                replies.append(whole)
            else:  # the original's second call gave the action
                replies += [thought, turn.action]
        return replies
    plan = "\n".join(f"{number}. {step}" for number, step in enumerate(entry.plan, start=1))
    return [plan, *(_step_reply(log, turn) for turn in entry.turns)]


def _step_reply(log: StrategyLog, turn: LoggedTurn) -> str:
    parsed = (turn.action, turn.ran)
    for reply in (turn.action, f"{FENCE}{log.env}\n{turn.action}\n{FENCE}"):
        if step_code(reply, log.env, as_written=log.as_written) == parsed:
            return reply
    return turn.action


def logged_model(log: StrategyLog, entry: LoggedEntry) -> ScriptedChatModel:
    """A chat model that answers with ``entry``'s logged replies."""
    return ScriptedChatModel(logged_replies(log, entry), model_name=f"paper-log:{log.path.name}")


def model_turns(log: StrategyLog, entry: LoggedEntry) -> list[LoggedTurn]:
    """The turns the model played (not the ReAct loop's own submit at the turn limit)."""
    return [t for t in entry.turns if t.thought != EXCEEDED]


def logged_actions(log: StrategyLog, entry: LoggedEntry) -> list[tuple[str, str]]:
    """(kind, action) of each turn the original's loop played: what it ran, or the reply it could not
    run (``invalid``), or ``submit``."""
    actions = []
    for turn in model_turns(log, entry):
        if not turn.ran:
            actions.append(("invalid", turn.action))
        elif log.strategy == "react":
            code, _ = react_code(turn.action, log.env)
            actions.append(("submit", "submit") if code == "submit" else ("action", code))
        else:
            actions.append(("action", turn.action))
    return actions


def our_actions(trajectory: Trajectory) -> list[tuple[str, str]]:
    """(kind, action) of each turn the model played in ``trajectory`` (not the loop's own submits)."""
    return [
        (step.kind, step.action)
        for step in trajectory.steps
        if not (step.kind == "submit" and step.thought in (FORCED_SUBMIT, SOLVED_NOTE))
    ]


# -- replaying --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class EntryReplay:
    """One entry replayed: what the log says and what our strategy did."""

    task_id: str
    entry: LoggedEntry
    trajectory: Trajectory
    logged: list[tuple[str, str]]
    ours: list[tuple[str, str]]

    @property
    def ours_solved(self) -> bool:
        return self.trajectory.outcome == "solved"

    @property
    def actions_equal(self) -> bool:
        """ReAct: the same turns. Plan & Solve: the same turns up to where ours stopped, which is the
        end of the plan or the first step that reached reward 1 (the original went on after it)."""
        if self.ours != self.logged[: len(self.ours)]:
            return False
        return len(self.ours) == len(self.logged) or self.ours_solved

    @property
    def success_equal(self) -> bool:
        return self.ours_solved == self.entry.solved

    @property
    def best_reward(self) -> float:
        """Our best scored state (ReAct: the submit's reward), as the log's ``max_reward``."""
        return max((step.reward for step in self.trajectory.steps if step.reward is not None), default=0.0)

    @property
    def score_equal(self) -> bool:
        """Our best reward equals the log's ``max_reward`` (the original rounded Bash's to 0.01)."""
        return abs(self.best_reward - self.entry.max_reward) <= SCORE_TOLERANCE

    def first_difference(self) -> str | None:
        """Where the actions part, as text (None when they do not)."""
        for number, (logged, ours) in enumerate(zip(self.logged, self.ours, strict=False), start=1):
            if logged != ours:
                return f"turn {number}: logged {logged!r}, ours {ours!r}"
        if self.actions_equal:
            return None
        return f"logged {len(self.logged)} turns, ours {len(self.ours)} ({self.trajectory.outcome})"


@dataclass
class LoggedRepliesPlayer:
    """Plays each task with a chat model that answers with its log entry's replies."""

    runner: Strategy
    log: StrategyLog
    entries: dict[str, LoggedEntry]  # by task id
    model: str = "paper-log"

    @property
    def strategy(self) -> str:
        return self.runner.name

    async def play(self, env: Env, task: Task, seed: int | None) -> Trajectory:
        chat = logged_model(self.log, self.entries[task.id])
        return await self.runner.run(env, chat, task=task, seed=seed, model_name=self.model)


def matched_tasks(log: StrategyLog, entries: Sequence[LoggedEntry]) -> list[Task]:
    """Our task of each entry, checked by its question."""
    tasks = []
    for entry in entries:
        task = get_task(log.task_id(entry))
        if " ".join(task.query.split()) != " ".join(entry.query.split()):
            raise ConfigError(f"{log.path} entry {entry.key}: its query differs from task {task.id}'s")
        tasks.append(task)
    return tasks


async def replay_log(
    log: StrategyLog,
    *,
    keys: Sequence[str] | None = None,
    concurrency: int = 1,
    on_done: Callable[[EntryReplay], None] | None = None,
) -> list[EntryReplay]:
    """Replay the entries ``keys`` (all by default) of ``log`` through our strategy, in real envs."""
    entries = [e for e in log.entries if keys is None or e.key in keys]
    if keys is not None and len(entries) != len(set(keys)):
        missing = sorted(set(keys) - {e.key for e in entries})
        raise ConfigError(f"{log.path} has no entries {', '.join(missing)}")
    tasks = matched_tasks(log, entries)
    by_task = {task.id: entry for task, entry in zip(tasks, entries, strict=True)}
    player = LoggedRepliesPlayer(get_strategy(log.strategy, **log.settings()), log, by_task)
    results: list[EntryReplay] = []

    def done(trajectory: Trajectory) -> None:
        entry = by_task[trajectory.task_id]
        result = EntryReplay(
            trajectory.task_id, entry, trajectory, logged_actions(log, entry), our_actions(trajectory)
        )
        results.append(result)
        if on_done is not None:
            on_done(result)

    await run_episodes(
        log.env,
        [Episode(task) for task in tasks],
        player,
        concurrency=concurrency,
        env_options=log.env_options(),
        on_done=done,
    )
    order = {entry.key: n for n, entry in enumerate(entries)}
    return sorted(results, key=lambda r: order[r.entry.key])

"""Replay the model replies of the paper's ReAct and Plan & Solve logs through our strategies.

The check behind ``--set prompts=paper``: a scripted chat model answers with an episode's logged
replies, our ``react`` or ``plan_solve`` strategy runs them with the paper prompt set against a real
env (SQL, or Bash with ``execution="paper"``), and the actions it ran and its success are compared
with the log's. Used by ``benchmarks/replay_paper_strategies.py`` and
``tests/strategies/test_strategies_paper.py``.

The log is read by :mod:`.paper_log`, the one reader of the paper's logs (its ``LoggedEpisode`` and
``LoggedTurn``: thought, plan step, action, the command the original's loop ran, observation, reward),
and the episodes compared are the re-score's (:func:`.paper_log.episodes_to_compare`): entries whose
query the data changed since, tasks that cannot run here, and the tasks declared in
:mod:`intercode_agents.datasets.gold_caveats` as not scorable as the paper scored them (the network,
the clock, the host, the original's container history) are left out of both sides, and listed with
their reason; so is an episode the env finds corrupt. ``rescore`` on the same log compares the same
episodes: it replays the logged actions, where this replay re-derives them from the replies through
our strategy.

What this module adds is the replies themselves, which the logs keep only in part (what the original's
loops made of each reply):

- **ReAct** turns keep the thought and the action as the model wrote them (``execute[...]`` or
  ``submit``), so the reply is ``<thought>\\nAction N: <action>``; a thought the original could only
  have got from its second call (no ``Action N:`` line) is replied alone and the action follows as the
  second reply. A last turn with the thought ``EXCEEDED MAX TURNS: submit`` is the loop's own submit at
  the turn limit, not a reply.
- **Plan & Solve** turns keep the plan step each carried out and the action as the original parsed it:
  the plan reply is the numbered steps, and a step's reply is its logged action, or the action in a
  fence where the paper's parse would otherwise read the bare text differently. So for Plan & Solve
  the replay checks the loop and the scores; the parse is checked by the ReAct logs, which keep the
  replies as written. A log whose actions hold fences ran its replies as written (Bash fs_1).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from intercode_agents.datasets import Task
from intercode_agents.envs import Env
from intercode_agents.envs.registry import env_class
from intercode_agents.errors import ConfigError
from intercode_agents.fidelity.paper_log import (
    SHAPE_NAMES,
    BadLog,
    LeftOut,
    LoggedEpisode,
    LoggedTurn,
    PaperLog,
    episodes_to_compare,
    read_log,
)
from intercode_agents.models.scripted import ScriptedChatModel
from intercode_agents.runner.workers import Episode, run_episodes
from intercode_agents.strategies import Strategy, get_strategy
from intercode_agents.strategies.episode import FORCED_SUBMIT
from intercode_agents.strategies.paper_loops import SOLVED_NOTE
from intercode_agents.strategies.paper_parsing import FENCE, react_split, step_code
from intercode_agents.trajectory import Trajectory

StrategyName = Literal["react", "plan_solve"]
EXCEEDED = "EXCEEDED MAX TURNS: submit"  # the thought of the ReAct loop's own submit at the turn limit
SCORE_TOLERANCE = 0.01


@dataclass(frozen=True)
class StrategyLog:
    """A ReAct or Plan & Solve log of the paper, as :mod:`.paper_log` read it, and how to replay it."""

    log: PaperLog
    strategy: StrategyName

    @property
    def path(self) -> Path:
        return self.log.path

    @property
    def env(self) -> str:
        return self.log.env

    @property
    def split(self) -> str:
        return self.log.split

    @property
    def episodes(self) -> tuple[LoggedEpisode, ...]:
        return self.log.episodes

    @property
    def execution(self) -> str:
        """Paper execution where the env has it (Bash: each action run as the original ran it)."""
        return "paper" if "paper" in env_class(self.env).execution_modes else "session"

    @cached_property
    def max_turns(self) -> int:
        """ReAct: the turn limit its summaries logged. Plan & Solve: its longest episode (the original
        had no limit)."""
        logged = {e.turns_max for e in self.episodes if e.turns_max is not None}
        if self.strategy == "react" and logged:
            return max(logged)
        return max((len(e.turns) for e in self.episodes), default=1) or 1

    @property
    def refine_turns(self) -> int:
        return int(self.log.meta.get("refine_turns") or 0) if self.log.meta.get("refine") else 0

    @cached_property
    def as_written(self) -> bool:
        """Plan & Solve replies that ran as written (the log's actions hold fences)."""
        return self.strategy == "plan_solve" and any(
            t.action.lstrip().startswith(FENCE) for e in self.episodes for t in e.turns
        )

    def settings(self) -> dict[str, Any]:
        """The strategy settings that replay this log's runs."""
        settings: dict[str, Any] = {"prompts": "paper", "max_turns": self.max_turns}
        if self.strategy == "plan_solve":
            settings |= {"refine_turns": self.refine_turns, "run_replies_as_written": self.as_written}
        return settings

    def env_options(self) -> dict[str, Any]:
        return {"reward": "intercode"} | ({"execution": "paper"} if self.execution == "paper" else {})


def read_strategy_log(path: str | Path) -> StrategyLog:
    """Read a ReAct or Plan & Solve log of the paper (a BadLog for anything else)."""
    log = read_log(path)
    if log.shape == "try_again":
        raise BadLog(
            f"{log.path}: not a ReAct or Plan & Solve log of the paper (its turns have no thoughts or "
            f"steps: a {SHAPE_NAMES[log.shape]} log)"
        )
    return StrategyLog(log, log.shape)


# -- the replies and the actions of an episode ----------------------------------------------------
def model_turns(episode: LoggedEpisode) -> list[LoggedTurn]:
    """The turns the model played (not the ReAct loop's own submit at the turn limit)."""
    return [t for t in episode.turns if t.thought != EXCEEDED]


def logged_replies(log: StrategyLog, episode: LoggedEpisode) -> list[str]:
    """The model's replies of ``episode``, in the order our strategy asks for them."""
    if log.strategy == "react":
        replies: list[str] = []
        for number, turn in enumerate(model_turns(episode), start=1):
            thought = turn.thought or ""
            whole = f"{thought}\nAction {number}: {turn.action}"
            if react_split(whole, number) == (thought, turn.action):
                replies.append(whole)
            else:  # the original's second call gave the action
                replies += [thought, turn.action]
        return replies
    steps = [t.step for t in episode.turns if t.step is not None]
    plan = "\n".join(f"{number}. {step}" for number, step in enumerate(steps, start=1))
    return [plan, *(_step_reply(log, turn) for turn in episode.turns)]


def _step_reply(log: StrategyLog, turn: LoggedTurn) -> str:
    parsed = (turn.action, turn.executed)
    for reply in (turn.action, f"{FENCE}{log.env}\n{turn.action}\n{FENCE}"):
        if step_code(reply, log.env, as_written=log.as_written) == parsed:
            return reply
    return turn.action


def logged_model(log: StrategyLog, episode: LoggedEpisode) -> ScriptedChatModel:
    """A chat model that answers with ``episode``'s logged replies."""
    return ScriptedChatModel(logged_replies(log, episode), model_name=f"paper-log:{log.path.name}")


def logged_actions(episode: LoggedEpisode) -> list[tuple[str, str]]:
    """(kind, action) of each turn the model played in the original's loop: ``submit``, the command it
    ran, or (``invalid``) the reply it ran nothing for, as the log's reader says."""
    actions = []
    for turn in model_turns(episode):
        if turn.submits:
            actions.append(("submit", "submit"))
        elif turn.command is not None:
            actions.append(("action", turn.command))
        else:
            actions.append(("invalid", turn.action))
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
class EpisodeReplay:
    """One episode replayed: what the log says and what our strategy did."""

    task_id: str
    episode: LoggedEpisode
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
        return self.ours_solved == self.episode.solved

    @property
    def best_reward(self) -> float:
        """Our best scored state (ReAct: the submit's reward), as the log's ``max_reward``."""
        return max((step.reward for step in self.trajectory.steps if step.reward is not None), default=0.0)

    @property
    def score_equal(self) -> bool:
        """Our best reward equals the log's ``max_reward`` (the original rounded Bash's to 0.01)."""
        return abs(self.best_reward - self.episode.max_reward) <= SCORE_TOLERANCE

    def first_difference(self) -> str | None:
        """Where the actions part, as text (None when they do not)."""
        for number, (logged, ours) in enumerate(zip(self.logged, self.ours, strict=False), start=1):
            if logged != ours:
                return f"turn {number}: logged {logged!r}, ours {ours!r}"
        if self.actions_equal:
            return None
        return f"logged {len(self.logged)} turns, ours {len(self.ours)} ({self.trajectory.outcome})"


def _rate(flags: Sequence[bool]) -> float:
    return sum(flags) / len(flags) if flags else 0.0


@dataclass(frozen=True)
class LogReplay:
    """A log replayed: the episodes compared, in the file's order, and those left out of both sides."""

    log: StrategyLog
    replayed: list[EpisodeReplay]
    left_out: list[LeftOut]

    @property
    def logged_rate(self) -> float:
        return _rate([r.episode.solved for r in self.replayed])

    @property
    def our_rate(self) -> float:
        return _rate([r.ours_solved for r in self.replayed])

    @property
    def difference_points(self) -> float:
        return 100 * (self.our_rate - self.logged_rate)


@dataclass
class LoggedRepliesPlayer:
    """Plays each task with a chat model that answers with its logged episode's replies."""

    runner: Strategy
    log: StrategyLog
    episodes: dict[str, LoggedEpisode]  # by task id
    model: str = "paper-log"

    @property
    def strategy(self) -> str:
        return self.runner.name

    async def play(self, env: Env, task: Task, seed: int | None) -> Trajectory:
        chat = logged_model(self.log, self.episodes[task.id])
        return await self.runner.run(env, chat, task=task, seed=seed, model_name=self.model)


async def replay_log(
    log: StrategyLog,
    *,
    keys: Sequence[str] | None = None,
    concurrency: int = 1,
    on_done: Callable[[Trajectory], None] | None = None,  # each episode played
) -> LogReplay:
    """Replay the entries ``keys`` (all by default) of ``log`` through our strategy, in real envs; the
    episodes the comparison leaves out (see the module docstring) are listed, not played."""
    chosen = tuple(e for e in log.episodes if keys is None or e.key in keys)
    if keys is not None and len(chosen) != len(set(keys)):
        missing = sorted(set(keys) - {e.key for e in chosen})
        raise ConfigError(f"{log.path} has no entries {', '.join(missing)}")
    compared = episodes_to_compare(dataclasses.replace(log.log, episodes=chosen), log.execution)
    by_task = {task.id: episode for task, episode in compared.pairs}
    player = LoggedRepliesPlayer(get_strategy(log.strategy, **log.settings()), log, by_task)
    results: list[EpisodeReplay] = []
    left_out = list(compared.left_out)

    def done(trajectory: Trajectory) -> None:
        episode = by_task[trajectory.task_id]
        if trajectory.outcome == "corrupt":  # the env cannot score it here: out of both sides
            reason = trajectory.reward_parts.get("corrupt_reason") or trajectory.error or "its gold fails"
            left_out.append(LeftOut(episode.key, trajectory.task_id, "corrupt", str(reason)))
        else:
            actions = logged_actions(episode), our_actions(trajectory)
            results.append(EpisodeReplay(trajectory.task_id, episode, trajectory, *actions))
        if on_done is not None:
            on_done(trajectory)

    if compared.pairs:
        await run_episodes(
            log.env,
            [Episode(task) for task, _ in compared.pairs],
            player,
            concurrency=concurrency,
            env_options=log.env_options(),
            on_done=done,
        )
    order = {episode.key: n for n, episode in enumerate(chosen)}
    results.sort(key=lambda r: order[r.episode.key])
    left_out.sort(key=lambda x: order[x.key])
    return LogReplay(log, results, left_out)

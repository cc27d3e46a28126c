"""Re-score trajectory files of the original InterCode harness in this harness.

Each logged episode is replayed on a pristine env of its task: every command the original's loop ran
runs again, and the state is scored after each turn that loop scored, in this project's ``intercode``
reward mode (or the one asked for). :mod:`intercode_agents.fidelity.paper_log` reads the three shapes of
log (Try Again, ReAct, Plan & Solve) and says, turn by turn, what ran and what was scored: Try Again
scored every command it ran (Python: each ``def``; CTF: each ``submit FLAG``), ReAct only its submits,
Plan & Solve every plan step that held code. A submit before any command scores the question itself,
which is what the original's env held as its last output then.

One quirk belongs to a version of the original's Bash env rather than to its loops: it compared the
agent's output with the gold's cut to the agent's length (``gold[-len(agent):]``, the whole when the
agent printed nothing). The paper's gpt-3.5 fs_1 and fs_3 runs were scored so (their logged gold
outputs are such tails); the fs_4 run was not. Which rule a Bash log was scored by is read from its
own rewards: where the two rules give a turn different rewards, the rule the logged rewards follow
(by a clear majority) is applied to every turn of the file, and the report says so.

A task counts as solved when some scored turn reached reward 1, as in the paper's tables. What is
compared is the same set of episodes on both sides: entries whose query differs from the pinned data
(``--strict-queries`` refuses the file instead), tasks that cannot run here, tasks the env finds
corrupt and the tasks of :mod:`intercode_agents.datasets.gold_caveats` that cannot be scored as the
paper scored them (the network, the clock, the host's load, the original's container history) are
left out of both, and listed with their reason (:func:`.paper_log.episodes_to_compare`, which the
replay of a log's replies through a strategy shares). The report says, per file, the log's success rate
and ours, the episodes that flip either way, and the turns whose rewards disagree most, with our
reward parts and whether the observations matched.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from intercode_agents.datasets import Task
from intercode_agents.envs import Env
from intercode_agents.envs.bash.reward import PART_WEIGHT, answer_similarity
from intercode_agents.envs.recorder import EpisodeRecorder
from intercode_agents.envs.registry import env_class
from intercode_agents.errors import ConfigError, UnknownTask
from intercode_agents.fidelity.paper_log import (
    FULL,
    LeftOut,
    LoggedEpisode,
    LoggedTurn,
    Shape,
    episodes_to_compare,
    read_log,
)
from intercode_agents.reward import check_mode
from intercode_agents.runner.direct import DIRECT
from intercode_agents.runner.preflight import image_ids
from intercode_agents.runner.progress import RunProgress
from intercode_agents.runner.workers import Episode, run_episodes
from intercode_agents.trajectory import Trajectory

AGREE = 1e-4  # rewards closer than this agree (the original rounded Bash parts to 0.01)
REACT_SHOWN = 350  # the ReAct loop logged an observation cut to this many characters
_SHOWN = 240


class CannotReplay(Exception):
    """A logged command this env cannot run as the original ran it."""


@dataclass
class TurnScore:
    """One logged turn, scored again."""

    turn: int  # 1-based, as in the log
    action: str
    logged: float
    ours: float | None  # None: the original did not score this turn
    logged_observation: str | None
    our_observation: str | None
    parts: dict[str, Any] = field(default_factory=dict)
    cut_at: int | None = None  # the log holds the observation's first cut_at characters only (ReAct)
    submitted: str | None = None  # the answer our scoring compared (Bash, SQL: the last output)

    @property
    def difference(self) -> float:
        return (self.ours or 0.0) - self.logged

    @property
    def disagrees(self) -> bool:
        return self.ours is not None and abs(self.difference) > AGREE

    @property
    def same_observation(self) -> bool | None:
        if self.logged_observation is None or self.our_observation is None:
            return None
        ours = self.our_observation if self.cut_at is None else self.our_observation[: self.cut_at]
        return self.logged_observation == ours


@dataclass
class EpisodeScore:
    task_id: str
    key: str
    logged_max: float
    ours_max: float | None  # None: the replay failed (see error) or the task is corrupt here
    turns: list[TurnScore]
    error: str | None = None
    corrupt: str | None = None  # why the env could not score the task (its gold cannot run here)
    gold_output: str | None = None  # the gold's output here (Bash: to score as a cutting harness did)

    @property
    def logged_solved(self) -> bool:
        return self.logged_max >= FULL

    @property
    def ours_solved(self) -> bool:
        return self.ours_max is not None and self.ours_max >= FULL


@dataclass
class FileReport:
    path: Path
    env: str
    split: str
    shape: Shape
    execution: str
    reward_mode: str
    replayed: list[EpisodeScore]  # every episode replayed (corrupt ones included)
    left_out: list[LeftOut]  # entries left out before the replay, and corrupt episodes
    wall_s: float
    entries: int = 0  # the entries of the file (or of its first --limit)
    quirks: list[str] = field(default_factory=list)  # scoring quirks of the log's harness, reproduced

    @property
    def episodes(self) -> list[EpisodeScore]:
        """The compared episodes: replayed, and not corrupt here."""
        return [e for e in self.replayed if e.corrupt is None]

    @property
    def logged_rate(self) -> float:
        return _rate([e.logged_solved for e in self.episodes])

    @property
    def our_rate(self) -> float:
        return _rate([e.ours_solved for e in self.episodes])

    @property
    def difference_points(self) -> float:
        return 100 * (self.our_rate - self.logged_rate)

    @property
    def gained(self) -> list[EpisodeScore]:
        """Solved here, not in the log."""
        return [e for e in self.episodes if e.ours_solved and not e.logged_solved]

    @property
    def lost(self) -> list[EpisodeScore]:
        """Solved in the log, not here."""
        return [e for e in self.episodes if e.logged_solved and not e.ours_solved]

    @property
    def errors(self) -> list[EpisodeScore]:
        return [e for e in self.replayed if e.error is not None]

    @property
    def scored_turns(self) -> int:
        return sum(t.ours is not None for e in self.episodes for t in e.turns)

    def disagreements(self) -> list[tuple[EpisodeScore, TurnScore]]:
        """Every scored turn whose reward differs from the log's, largest difference first."""
        found = [(e, t) for e in self.episodes for t in e.turns if t.disagrees]
        return sorted(found, key=lambda pair: (-abs(pair[1].difference), pair[0].task_id, pair[1].turn))

    def to_json(self, worst: int = 10) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "env": self.env,
            "split": self.split,
            "shape": self.shape,
            "execution": self.execution,
            "reward_mode": self.reward_mode,
            "entries": self.entries,
            "episodes": len(self.episodes),
            "left_out": [asdict(x) for x in self.left_out],
            "log_solved": sum(e.logged_solved for e in self.episodes),
            "our_solved": sum(e.ours_solved for e in self.episodes),
            "log_success_rate": round(100 * self.logged_rate, 2),
            "our_success_rate": round(100 * self.our_rate, 2),
            "difference_points": round(self.difference_points, 2),
            "gained": [e.task_id for e in self.gained],
            "lost": [e.task_id for e in self.lost],
            "scored_turns": self.scored_turns,
            "disagreeing_turns": len(self.disagreements()),
            "worst_disagreements": [_disagreement_json(e, t) for e, t in self.disagreements()[:worst]],
            "errors": [{"task_id": e.task_id, "error": e.error} for e in self.errors],
            "quirks": self.quirks,
            "wall_s": round(self.wall_s, 2),
        }


def _rate(flags: Sequence[bool]) -> float:
    return sum(flags) / len(flags) if flags else 0.0


def _short(text: str | None) -> str | None:
    if text is None or len(text) <= _SHOWN:
        return text
    return text[:_SHOWN] + f"... [{len(text) - _SHOWN} more characters]"


def _disagreement_json(episode: EpisodeScore, turn: TurnScore) -> dict[str, Any]:
    data = asdict(turn)
    data.update(
        task_id=episode.task_id,
        difference=round(turn.difference, 4),
        same_observation=turn.same_observation,
        action=_short(turn.action),
        logged_observation=_short(turn.logged_observation),
        our_observation=_short(turn.our_observation),
        submitted=_short(turn.submitted),
    )
    return data


def gold_cut_reward(turn: TurnScore, gold_output: str) -> float | None:
    """The turn's reward had its answer been compared with the gold's output cut to the answer's length,
    as one version of the original's Bash env did; None for a turn without a Bash answer part."""
    if turn.ours is None or turn.submitted is None or "answer" not in turn.parts:
        return None
    tail = gold_output[-len(turn.submitted) :]  # as Python slices it: all of it for an empty answer
    answer = round(PART_WEIGHT * answer_similarity(turn.submitted, tail), 2)
    return round(turn.ours - float(turn.parts["answer"]) + answer, 2)


def reproduce_gold_cut(episodes: Sequence[EpisodeScore]) -> str | None:
    """Score every turn as a cutting harness did when the logged rewards show it did (see the module
    docstring), and say why; None when they do not."""
    apart = [  # the turns the two rules score apart, with the cutting rule's reward
        (episode, turn, cut)
        for episode in episodes
        if episode.gold_output is not None
        for turn in episode.turns
        if (cut := gold_cut_reward(turn, episode.gold_output)) is not None
        and abs(cut - (turn.ours or 0.0)) > AGREE
    ]
    cut_agrees = sum(abs(cut - turn.logged) <= AGREE for _, turn, cut in apart)
    whole_agrees = sum(abs((turn.ours or 0.0) - turn.logged) <= AGREE for _, turn, _ in apart)
    if cut_agrees < 3 or cut_agrees <= 2 * whole_agrees:
        return None
    for _, turn, cut in apart:
        turn.parts["whole_gold_reward"], turn.ours = turn.ours, cut
    for episode in {id(e): e for e, _, _ in apart}.values():
        episode.ours_max = max(t.ours for t in episode.turns if t.ours is not None)
    return (
        "scored as the log's harness did, with the gold's output cut to the length of the agent's: the "
        f"logged rewards follow that rule on {cut_agrees} of the turns the two rules score apart, the "
        f"whole output on {whole_agrees}"
    )


@dataclass
class LogPlayer:
    """Replays logged episodes (by task id) and keeps each one's scores."""

    logged: dict[str, LoggedEpisode]
    shape: Shape = "try_again"
    gold_outputs: bool = False  # run each task's gold once more, for its output (Bash)
    strategy: str = DIRECT
    model: str = "rescore"
    scores: dict[str, EpisodeScore] = field(default_factory=dict)

    async def play(self, env: Env, task: Task, seed: int | None) -> Trajectory:
        episode = self.logged[task.id]
        context = {"log_entry": episode.key, "policy": self.model}
        recorder = EpisodeRecorder(env, strategy=self.strategy, model=self.model, context=context)
        recorder.trajectory.task_id = task.id
        score = EpisodeScore(task.id, episode.key, episode.max_reward, None, [])
        try:
            await self._replay(env, task, episode, score, recorder)
            if self.gold_outputs and score.corrupt is None:
                await env.reset(task=task)  # a fresh sandbox, where the gold runs as an action would
                score.gold_output = (await env.step(task.gold)).observation
        except (ConfigError, UnknownTask):
            raise
        except Exception as exc:  # an env failure ends this episode only
            score.error = f"{type(exc).__name__}: {exc}"
        rewards = [t.ours for t in score.turns if t.ours is not None]
        self.scores[task.id] = score
        if score.error is not None:
            recorder.failed("env_error", score.error)
            return recorder.finish(settle=False)
        if score.corrupt is not None:
            recorder.failed("corrupt", score.corrupt)
            return recorder.finish(settle=False)
        score.ours_max = max(rewards, default=0.0)
        traj = recorder.finish(settle=False)
        traj.reward = score.ours_max  # the best turn's, as the paper's tables count an episode
        traj.outcome = "solved" if score.ours_solved else "failed"
        return traj

    async def _replay(
        self, env: Env, task: Task, episode: LoggedEpisode, score: EpisodeScore, recorder: EpisodeRecorder
    ) -> None:
        question, info = await env.reset(task=task)
        recorder.started(question, info)
        traj = recorder.trajectory
        ran = False
        for number, turn in enumerate(episode.turns, start=1):
            observation = await self._run(env, number, turn, recorder) if turn.command is not None else None
            ran = ran or turn.command is not None
            ours: float | None = None
            parts: dict[str, Any] = {}
            submitted: str | None = None
            if turn.scored:
                submission = turn.submission
                if submission is None and not ran and not env.submit_takes_argument:
                    submission = task.query  # the original's env held the question as its last output
                submitted = env.last_observation if submission is None else submission
                result = await env.evaluate(submission)
                if result.corrupt:
                    score.corrupt = result.note or "the env cannot run this task's gold"
                    return
                ours, parts = float(result.reward), dict(result.parts)
                if traj.steps and traj.steps[-1].turn == number:
                    traj.steps[-1].reward = ours
            logged = max(turn.reward, 0.0) if env.name == "ctf" else turn.reward  # -1: a wrong flag
            cut = REACT_SHOWN if self.shape == "react" else None
            score.turns.append(
                TurnScore(
                    number, turn.action, logged, ours, turn.observation, observation, parts, cut, submitted
                )
            )

    async def _run(self, env: Env, number: int, turn: LoggedTurn, recorder: EpisodeRecorder) -> str:
        """Run the command the original's loop sent (a command, whatever its text: the log's reader
        already told commands from submits, as the loop did)."""
        command = turn.command
        assert command is not None
        result = await env.step(command)
        recorder.step(result, command, turn=number)
        return result.observation


def check_options(concurrency: int, limit: int | None, reward: str) -> None:
    """Refuse settings no re-score can run with."""
    if concurrency < 1:
        raise ConfigError(f"--concurrency must be at least 1, got {concurrency}")
    if limit is not None and limit < 1:
        raise ConfigError(f"--limit must be at least 1, got {limit}")
    check_mode(reward)


async def rescore_file(
    path: str | Path,
    *,
    env: str | None = None,
    execution: str = "session",
    reward: str = "intercode",
    concurrency: int = 4,
    limit: int | None = None,
    strict_queries: bool = False,
    data_root: str | Path | None = None,
    progress: bool = True,
    console: Console | None = None,
) -> FileReport:
    """Re-score one trajectory file of the original harness (see the module docstring)."""
    check_options(concurrency, limit, reward)
    log = read_log(path, env=env)
    episodes = log.episodes[:limit] if limit else log.episodes
    log = type(log)(log.path, log.env, log.split, log.shape, episodes, log.meta)
    if execution not in env_class(log.env).execution_modes:
        execution = "session"  # SQL and Python have one execution mode; the report says which ran
    compared = episodes_to_compare(log, execution, data_root=data_root, strict_queries=strict_queries)
    left_out, pairs = list(compared.left_out), compared.pairs
    tasks = [task for task, _ in pairs]
    by_cutting = log.env == "bash" and reward == "intercode"  # the quirk is of the intercode maths
    player = LogPlayer({task.id: ep for task, ep in pairs}, log.shape, gold_outputs=by_cutting)
    started = time.perf_counter()
    if tasks:
        ids = await image_ids(tasks, execution=execution)
        options: dict[str, Any] = {"reward": reward, "execution": execution}
        if data_root is not None:
            options["data_root"] = data_root
        label = f"rescore {log.path.name}"
        with RunProgress(len(tasks), label=label, console=console, enabled=progress) as bar:
            await run_episodes(
                log.env,
                [Episode(task) for task in tasks],
                player,
                concurrency=concurrency,
                env_options=options,
                image_ids=ids,
                on_done=bar.advance,
            )
    replayed = [player.scores[task.id] for task in tasks]
    quirk = reproduce_gold_cut([e for e in replayed if e.corrupt is None]) if by_cutting else None
    for score in replayed:
        if score.corrupt is not None:
            left_out.append(LeftOut(score.key, score.task_id, "corrupt", score.corrupt))
    order = {e.key: i for i, e in enumerate(log.episodes)}
    left_out.sort(key=lambda x: order.get(x.key, len(order)))
    return FileReport(
        log.path,
        log.env,
        log.split,
        log.shape,
        execution,
        reward,
        replayed,
        left_out,
        time.perf_counter() - started,
        entries=len(log.episodes),
        quirks=[quirk] if quirk else [],
    )

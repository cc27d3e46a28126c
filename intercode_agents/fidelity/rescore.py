"""Re-score trajectory files of the original InterCode harness in this harness.

Each logged episode is replayed on a pristine env of its task: every action the original ran runs
again, and the state is scored after each turn the way the original's Try Again loop scored it, in
this project's ``intercode`` reward mode (or the one asked for). Which turns the original scored,
and with what submission:

- Bash and SQL: every action it ran, submitting the action's output;
- Python: actions that start with ``def``, submitting the first function they define (the
  original's ``submit <name>``; other actions were never scored and logged 0);
- CTF: ``submit FLAG`` actions (a wrong flag logged 0, or -1 in later versions of the harness).

A task counts as solved when some turn reached reward 1, as in the paper's tables. The report says,
per file, the log's success rate and ours, the episodes that flip either way, and the turns whose
rewards disagree most, with our reward parts and whether the observations matched.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from intercode_agents.datasets import Task
from intercode_agents.envs import Env
from intercode_agents.envs.registry import env_class
from intercode_agents.envs.steps import Submit, read_action
from intercode_agents.errors import ConfigError, UnknownTask
from intercode_agents.fidelity.paper_log import (
    FULL,
    LoggedEpisode,
    LoggedTurn,
    PaperLog,
    match_tasks,
    read_log,
)
from intercode_agents.reward import check_mode
from intercode_agents.runner.config import check_ray, ray_address
from intercode_agents.runner.direct import DIRECT
from intercode_agents.runner.preflight import image_ids
from intercode_agents.runner.progress import RunProgress
from intercode_agents.runner.workers import Episode, run_episodes
from intercode_agents.trajectory import Step, Trajectory

AGREE = 1e-4  # rewards closer than this agree (the original rounded Bash parts to 0.01)
_FIRST_DEF = re.compile(r"def (\w+)\(")  # the original's pattern for the function an action defines
_SHOWN = 240


@dataclass
class TurnScore:
    """One logged turn, scored again."""

    turn: int  # 1-based, as in the log
    action: str
    logged: float
    ours: float | None  # None: the original did not score this turn, or did not run it
    logged_observation: str | None
    our_observation: str | None
    parts: dict[str, Any] = field(default_factory=dict)

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
        return self.logged_observation == self.our_observation


@dataclass
class EpisodeScore:
    task_id: str
    key: str
    logged_max: float
    ours_max: float | None  # None: the replay failed (see error)
    turns: list[TurnScore]
    error: str | None = None

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
    execution: str
    reward_mode: str
    episodes: list[EpisodeScore]
    wall_s: float

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
        return [e for e in self.episodes if e.error is not None]

    def disagreements(self) -> list[tuple[EpisodeScore, TurnScore]]:
        """Every scored turn whose reward differs from the log's, largest difference first."""
        found = [(e, t) for e in self.episodes for t in e.turns if t.disagrees]
        return sorted(found, key=lambda pair: (-abs(pair[1].difference), pair[0].task_id, pair[1].turn))

    def to_json(self, worst: int = 10) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "env": self.env,
            "split": self.split,
            "execution": self.execution,
            "reward_mode": self.reward_mode,
            "episodes": len(self.episodes),
            "log_solved": sum(e.logged_solved for e in self.episodes),
            "our_solved": sum(e.ours_solved for e in self.episodes),
            "log_success_rate": round(100 * self.logged_rate, 2),
            "our_success_rate": round(100 * self.our_rate, 2),
            "difference_points": round(self.difference_points, 2),
            "gained": [e.task_id for e in self.gained],
            "lost": [e.task_id for e in self.lost],
            "scored_turns": sum(t.ours is not None for e in self.episodes for t in e.turns),
            "disagreeing_turns": len(self.disagreements()),
            "worst_disagreements": [_disagreement_json(e, t) for e, t in self.disagreements()[:worst]],
            "errors": [{"task_id": e.task_id, "error": e.error} for e in self.errors],
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
    )
    return data


def submission_of(env_name: str, turn: LoggedTurn) -> tuple[bool, str | None]:
    """Whether the original scored this turn, and the submission it scored (None: the last output)."""
    if not turn.executed:
        return False, None
    if env_name == "python":
        match = _FIRST_DEF.match(turn.action) if turn.action.startswith("def") else None
        return (True, match.group(1)) if match else (False, None)
    if env_name == "ctf":
        read = read_action(turn.action)
        flag = read.answer if isinstance(read, Submit) else None
        return (True, flag.split(" ")[0] if flag else "") if flag is not None else (False, None)
    return True, None


SCORE_KEY = "rescore"  # where a replayed episode's scores ride in its trajectory's context


def score_of(traj: Trajectory) -> EpisodeScore:
    """The scores :class:`LogPlayer` put in ``traj`` (they travel with it, from a Ray node too)."""
    raw = dict(traj.context[SCORE_KEY])
    raw["turns"] = [TurnScore(**turn) for turn in raw["turns"]]
    return EpisodeScore(**raw)


@dataclass
class LogPlayer:
    """Replays logged episodes (by task id); each one's scores ride in its trajectory's context
    (:func:`score_of`), so the player keeps nothing and can play anywhere."""

    logged: dict[str, LoggedEpisode]
    strategy: str = DIRECT
    model: str = "rescore"

    async def play(self, env: Env, task: Task, seed: int | None) -> Trajectory:
        episode = self.logged[task.id]
        traj = Trajectory(
            task_id=task.id,
            env=env.name,
            strategy=self.strategy,
            model=self.model,
            reward_mode=env.reward_mode,
            execution=env.execution,
            context={"log_entry": episode.key, "policy": self.model},
            started_at=time.time(),
        )
        clock = time.perf_counter()
        score = EpisodeScore(task.id, episode.key, episode.max_reward, None, [])
        try:
            await self._replay(env, task, episode, score, traj)
        except (ConfigError, UnknownTask):
            raise
        except Exception as exc:  # an env failure ends this episode only
            score.error = f"{type(exc).__name__}: {exc}"
        rewards = [t.ours for t in score.turns if t.ours is not None]
        if score.error is None:
            score.ours_max = max(rewards, default=0.0)
            traj.reward = score.ours_max
            traj.outcome = "solved" if score.ours_solved else "failed"
        else:
            traj.outcome, traj.error = "env_error", score.error
        traj.duration_s = time.perf_counter() - clock
        traj.context[SCORE_KEY] = asdict(score)
        return traj

    async def _replay(
        self, env: Env, task: Task, episode: LoggedEpisode, score: EpisodeScore, traj: Trajectory
    ) -> None:
        await env.reset(task=task)
        for number, turn in enumerate(episode.turns, start=1):
            scored, submission = submission_of(env.name, turn)
            observation: str | None = None
            if turn.executed and not isinstance(read_action(turn.action), Submit):
                observation, _, _, _, info = await env.gym.step(turn.action)
                traj.steps.append(
                    Step(
                        turn=number,
                        kind=info.get("action_type", "action"),
                        action=turn.action,
                        observation=observation,
                        exit_code=info.get("exit_code"),
                        errored=bool(info.get("errored")),
                        duration_s=float(info.get("duration_s") or 0.0),
                        timed_out=bool(info.get("timed_out")),
                    )
                )
            ours: float | None = None
            parts: dict[str, Any] = {}
            if scored:
                result = await env.evaluate(submission)
                ours, parts = float(result.reward), dict(result.parts)
                if traj.steps and traj.steps[-1].turn == number:
                    traj.steps[-1].reward = ours
            logged = max(turn.reward, 0.0) if env.name == "ctf" else turn.reward  # -1: a wrong flag
            score.turns.append(
                TurnScore(number, turn.action, logged, ours, turn.observation, observation, parts)
            )


async def rescore_file(
    path: str | Path,
    *,
    env: str | None = None,
    execution: str = "session",
    reward: str = "intercode",
    concurrency: int = 4,
    limit: int | None = None,
    data_root: str | Path | None = None,
    progress: bool = True,
    console: Console | None = None,
    ray: str | bool | None = None,
) -> FileReport:
    """Re-score one trajectory file of the original harness (see the module docstring). ``ray``:
    replay the episodes on a Ray cluster (see :class:`~intercode_agents.runner.config.EvalConfig`)."""
    check_ray(ray, None)
    if concurrency < 1:
        raise ConfigError(f"--concurrency must be at least 1, got {concurrency}")
    if limit is not None and limit < 1:
        raise ConfigError(f"--limit must be at least 1, got {limit}")
    check_mode(reward)
    log = read_log(path, env=env)
    log = PaperLog(log.path, log.env, log.split, log.episodes[:limit] if limit else log.episodes)
    if execution not in env_class(log.env).execution_modes:
        execution = "session"  # SQL and Python have one execution mode; the report says which ran
    tasks = match_tasks(log, data_root=data_root)
    unavailable = [t for t in tasks if t.unavailable]
    if unavailable:
        raise ConfigError(f"task {unavailable[0].id} cannot run here: {unavailable[0].unavailable}")
    player = LogPlayer({task.id: ep for task, ep in zip(tasks, log.episodes, strict=True)})
    options: dict[str, Any] = {"reward": reward, "execution": execution}
    if data_root is not None:
        options["data_root"] = data_root
    scores: dict[str, EpisodeScore] = {}
    started = time.perf_counter()
    label = f"rescore {log.path.name}"
    with RunProgress(len(tasks), label=label, console=console, enabled=progress) as bar:

        def done(traj: Trajectory) -> None:
            scores[traj.task_id] = score_of(traj)
            bar.advance(traj)

        async def play(cluster: Any) -> None:
            await run_episodes(
                log.env,
                [Episode(task) for task in tasks],
                player,
                concurrency=concurrency,
                env_options=options,
                image_ids=ids,
                on_done=done,
                ray=cluster,
            )

        address = ray_address(ray)
        if address is None:
            ids = await image_ids(tasks, execution=execution)
            await play(None)
        else:  # (every node checks its images before it plays)
            from intercode_agents.runner.ray.driver import open_ray

            ids = {}
            async with open_ray(address, console=console) as cluster:
                await play(cluster)
    episodes = [scores[task.id] for task in tasks]
    return FileReport(
        log.path, log.env, log.split, execution, reward, episodes, time.perf_counter() - started
    )

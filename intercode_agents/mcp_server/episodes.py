"""Episodes held by the MCP server: each one an env of its own, keyed by an unguessable id.

Current MCP protocol revisions are sessionless, so nothing here depends on a transport session:
every call names its episode, and the id (random, 128 bits) is the only handle on it. The registry
limits how many episodes run at once, ends episodes idle past their TTL (a reaper task), and ends
all of them when it closes, which the server does on exit and when a stdio client goes away: their
containers are removed then. Every episode is recorded as a :class:`~intercode_agents.trajectory.
Trajectory` (strategy ``mcp``), appended to ``trajectories.jsonl`` of the server's record folder
when it has one. With several engines (``ServerOptions.engines``, ``--engines``) each episode's env
gets the server's one engine set, as the runner's envs do, so its sandboxes are placed over them and
closing the env removes them on whichever engine holds them.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from langchain_core.language_models import BaseChatModel

from intercode_agents.envs import Env, make_env, parse_submit
from intercode_agents.errors import IntercodeError
from intercode_agents.guards import Guard, GuardPolicy
from intercode_agents.reward import REWARD_MODES
from intercode_agents.runner.run_dir import RecordWriter
from intercode_agents.sandbox import EngineSet
from intercode_agents.spec import env_names
from intercode_agents.strategies.episode import guard_fields
from intercode_agents.tools.observation import DEFAULT_OBSERVATION_LIMIT, model_view
from intercode_agents.trajectory import Step, Trajectory

STRATEGY = "mcp"


class EpisodeError(IntercodeError):
    """A call the server answers with a tool error: a bad id, a bad argument, a full server."""


def served_env(name: str) -> str:
    """``name`` if the server serves that env: a shipped one, or a user's env YAML its operator
    loaded at start (``intercode-agents mcp --env PATH``). A client names envs and never gives a
    path: the server reads no file a client points it at."""
    if "/" in name or "\\" in name or Path(name).suffix in (".yaml", ".yml"):
        raise EpisodeError(
            f"env {name!r}: name an env the server serves ({', '.join(env_names())}); a user's env "
            "YAML is loaded by whoever starts the server (intercode-agents mcp --env PATH)"
        )
    if name not in env_names():
        raise EpisodeError(f"unknown env {name!r}; the envs are {', '.join(env_names())}")
    return name


@dataclass
class ServerOptions:
    """What the server allows and applies to every episode."""

    max_episodes: int = 8
    ttl_s: float = 900.0
    max_turns: int | None = None
    action_timeout: float | None = None
    observation_limit: int = DEFAULT_OBSERVATION_LIMIT
    guards: bool = False  # the SQL and Bash guards and automatic rollback
    rollback: bool = True  # the start checkpoint and the rollback tool
    critic_model: BaseChatModel | None = None
    max_vetoes: int = 2
    record_dir: Path | None = None
    client_label: str = "mcp-client"
    engines: EngineSet | None = None  # where the sandboxes run (None: $INTERCODE_ENGINES, else the default)

    def policy(self) -> GuardPolicy:
        return GuardPolicy(
            sql_guard=self.guards,
            bash_guard=self.guards,
            auto_rollback=self.guards,
            rollback=self.rollback,
            critic=self.critic_model is not None,
            max_vetoes=self.max_vetoes,
        )


@dataclass
class ServerEpisode:
    id: str
    env: Env
    guard: Guard
    trajectory: Trajectory
    started: float
    last_used: float = field(default_factory=time.monotonic)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def touch(self) -> None:
        self.last_used = time.monotonic()

    @property
    def turn(self) -> int:
        return len(self.trajectory.steps) + 1


class EpisodeRegistry:
    """The server's episodes (see the module docstring). Use it as ``async with``."""

    def __init__(self, options: ServerOptions | None = None) -> None:
        self.options = options or ServerOptions()
        self.episodes: dict[str, ServerEpisode] = {}
        self._starting = 0
        self._reaper: asyncio.Task[None] | None = None
        self._writer: RecordWriter | None = None
        self._closed = False

    async def __aenter__(self) -> EpisodeRegistry:
        if self.options.record_dir is not None:
            self.options.record_dir.mkdir(parents=True, exist_ok=True)
            self._writer = RecordWriter(self.options.record_dir / "trajectories.jsonl")
        self._reaper = asyncio.create_task(self._reap(), name="mcp-episode-reaper")
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """End every episode (their containers are removed) and stop the reaper."""
        self._closed = True
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
        for episode_id in list(self.episodes):
            await asyncio.shield(self.end(episode_id, why="the server is stopping"))
        if self._writer is not None:
            self._writer.close()

    async def _reap(self) -> None:
        period = max(min(self.options.ttl_s / 4, 30.0), 0.05)
        while True:
            await asyncio.sleep(period)
            now = time.monotonic()
            for episode in list(self.episodes.values()):
                if now - episode.last_used > self.options.ttl_s and not episode.lock.locked():
                    await self.end(episode.id, why=f"idle for more than {self.options.ttl_s:g} s")

    # -- lifecycle ----------------------------------------------------------------------------
    def get(self, episode_id: str) -> ServerEpisode:
        episode = self.episodes.get(episode_id) if isinstance(episode_id, str) else None
        if episode is None:
            raise EpisodeError(
                f"no episode {episode_id!r}: it never existed, was ended, or was idle for more than "
                f"{self.options.ttl_s:g} s; start one with start_episode"
            )
        episode.touch()
        return episode

    async def start(
        self, env_name: str, task_id: str | None, reward_mode: str | None
    ) -> tuple[ServerEpisode, str]:
        """A new episode of ``task_id`` (None: a live sandbox of the env, no task) and its question."""
        if self._closed:
            raise EpisodeError("the server is stopping")
        served_env(env_name)
        reward = reward_mode or "intercode"
        if reward not in REWARD_MODES:
            raise EpisodeError(f"unknown reward_mode {reward!r}; choose one of {', '.join(REWARD_MODES)}")
        if len(self.episodes) + self._starting >= self.options.max_episodes:
            raise EpisodeError(
                f"{self.options.max_episodes} episodes are running, the most this server allows: "
                "end one (end_episode) before starting another"
            )
        self._starting += 1
        try:
            return await self._open(env_name, task_id, reward)
        except EpisodeError:
            raise
        except IntercodeError as exc:  # an unknown task, a task that cannot run here, a bad option
            raise EpisodeError(str(exc)) from exc
        finally:
            self._starting -= 1

    async def _open(self, env_name: str, task_id: str | None, reward: str) -> tuple[ServerEpisode, str]:
        overrides: dict[str, Any] = {"reward": reward, "max_turns": self.options.max_turns}
        if self.options.engines is not None:  # (else an env YAML's own backend applies)
            overrides["backend"] = self.options.engines
        if self.options.action_timeout is not None:
            overrides["action_timeout"] = self.options.action_timeout
        env = make_env(env_name, **overrides)
        try:
            await env.start()
            question, info = await env.reset(task_id) if task_id else ("", {"task_id": "", "group": {}})
            guard = Guard(env, self.options.policy(), critic_model=self.options.critic_model)
            await guard.begin()
        except BaseException:
            await env.close()
            raise
        episode_id = secrets.token_urlsafe(16)
        trajectory = Trajectory(
            task_id=info.get("task_id") or "",
            env=env.name,
            strategy=STRATEGY,
            model=self.options.client_label,
            reward_mode=env.reward_mode,
            execution=env.execution,
            group=dict(info.get("group") or {}),
            image_id=info.get("image"),
            context={
                "max_turns": self.options.max_turns,
                "observation_limit": self.options.observation_limit,
            },
            started_at=time.time(),
        )
        episode = ServerEpisode(episode_id, env, guard, trajectory, time.perf_counter())
        self.episodes[episode_id] = episode
        return episode, question

    async def end(self, episode_id: str, *, why: str = "ended by the client") -> Trajectory:
        """End an episode: record it and remove its containers."""
        episode = self.episodes.pop(episode_id, None)
        if episode is None:
            raise EpisodeError(f"no episode {episode_id!r} to end")
        async with episode.lock:
            trajectory = episode.trajectory
            trajectory.guards = episode.guard.summary()
            trajectory.duration_s = time.perf_counter() - episode.started
            if trajectory.reward is None:
                trajectory.outcome, trajectory.error = "failed", f"not submitted: {why}"
            try:
                await episode.env.close()
            finally:
                if self._writer is not None and episode.env.task is not None:
                    self._writer.write(trajectory)
        return trajectory

    # -- actions ------------------------------------------------------------------------------
    async def act(self, episode_id: str, action: str) -> dict[str, Any]:
        episode = self.get(episode_id)
        if not isinstance(action, str) or not action.strip():
            raise EpisodeError("the action is empty: pass the command or query to run as `action`")
        if parse_submit(action) is not None:
            raise EpisodeError("to finish, call the submit tool instead of running `submit`")
        async with episode.lock:
            self._check_running(episode)
            turn = episode.turn
            observation, _, _, truncated, info = await self._call(episode.guard.step(action, turn=turn))
            view = model_view(
                observation,
                self.options.observation_limit,
                exit_code=info.get("exit_code"),
                timed_out=bool(info.get("timed_out")),
            )
            kind = info.get("action_type", "action")
            episode.trajectory.steps.append(
                Step(
                    turn=turn,
                    kind=kind if kind in ("action", "invalid", "refused", "rollback") else "action",
                    action=action,
                    observation=view.text,
                    exit_code=info.get("exit_code"),
                    errored=bool(info.get("errored")),
                    duration_s=float(info.get("duration_s") or 0.0),
                    observation_truncated=view.truncated,
                    output_truncated=bool(info.get("output_truncated")),
                    timed_out=bool(info.get("timed_out")),
                    **guard_fields(info),
                )
            )
            return {
                "observation": view.text,
                "exit_code": info.get("exit_code"),
                "errored": bool(info.get("errored")),
                "timed_out": bool(info.get("timed_out")),
                "output_truncated": bool(info.get("output_truncated")),
                "observation_truncated": view.truncated,
                "action_type": kind,
                "turn": turn,
                "turn_limit_reached": truncated,
                "guard": info.get("guard"),
            }

    async def evaluate(self, episode_id: str, answer: str | None) -> dict[str, Any]:
        episode = self.get(episode_id)
        async with episode.lock:
            self._check_running(episode, needs_task=True)
            result = await self._call(episode.env.evaluate(answer))
            return {"reward": result.reward, "parts": dict(result.parts), "corrupt": result.corrupt}

    async def submit(self, episode_id: str, answer: str | None) -> dict[str, Any]:
        episode = self.get(episode_id)
        async with episode.lock:
            self._check_running(episode, needs_task=True)
            if episode.env.submit_takes_argument and not answer and episode.env.task is not None:
                answer = str(episode.env.task.meta.get("entry_point") or "")
            action = f"submit {answer}" if answer else "submit"
            turn = episode.turn
            observation, reward, done, _, info = await self._call(episode.guard.step(action, turn=turn))
            vetoed = not done and info.get("action_type") == "vetoed"
            step = Step(
                turn=turn,
                kind="vetoed" if vetoed else "submit",
                action=action,
                observation=observation,
                reward=None if vetoed else reward,
                duration_s=float(info.get("duration_s") or 0.0),
                **guard_fields(info),
            )
            episode.trajectory.steps.append(step)
            if vetoed:
                return {"submitted": False, "vetoed": True, "reasons": step.veto, "observation": observation}
            parts = dict(info.get("reward_parts") or {})
            if info.get("corrupt"):
                parts["corrupt"] = True
            episode.trajectory.reward, episode.trajectory.reward_parts = float(reward), parts
            episode.trajectory.settle()
            return {
                "submitted": True,
                "reward": reward,
                "parts": parts,
                "corrupt": bool(info.get("corrupt")),
                "submission": info.get("submission"),
            }

    async def rollback(self, episode_id: str, to: str) -> dict[str, Any]:
        episode = self.get(episode_id)
        if to not in ("last", "start"):
            raise EpisodeError(f"`to` is 'last' or 'start', not {to!r}")
        async with episode.lock:
            self._check_running(episode)
            if not episode.guard.can_roll_back:
                raise EpisodeError(
                    f"nothing to roll back: the {episode.env.name} env has no task files"
                    if not episode.guard.task_dirs
                    else "rollback is switched off on this server"
                )
            turn = episode.turn
            observation, _, _, _, info = await self._call(
                episode.guard.step("rollback start" if to == "start" else "rollback", turn=turn)
            )
            note = (info.get("guard") or {}).get("rollback")
            episode.trajectory.steps.append(
                Step(
                    turn=turn,
                    kind="rollback",
                    action=f"rollback {to}",
                    observation=observation,
                    rollback=note,
                )
            )
            return {"observation": observation, "rollback": note}

    def _check_running(self, episode: ServerEpisode, *, needs_task: bool = False) -> None:
        if needs_task and episode.env.task is None:
            raise EpisodeError("this episode is a sandbox with no task: there is nothing to score")
        if episode.env.done:
            raise EpisodeError("the episode is over (its answer was submitted): call end_episode")

    async def _call(self, call: Any) -> Any:
        try:
            return await call
        except IntercodeError as exc:
            raise EpisodeError(f"{type(exc).__name__}: {exc}") from exc

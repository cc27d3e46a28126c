"""Episodes a client drives one call at a time, each an env of its own, keyed by an unguessable id.

Two front ends hold episodes this way: the MCP server (``intercode-agents mcp``) for MCP clients, and
each node's actor on a Ray cluster (:mod:`intercode_agents.runner.ray.node`) for a trainer's workers.
Nothing here depends on a transport or a session: every call names its episode, and the id (random,
128 bits) is the only handle on it. The registry limits how many episodes run at once, ends episodes
idle past their TTL (a reaper task), and ends all of them when it closes, which the server does on
exit and when a stdio client goes away, and an actor when its run ends: their containers are removed
then. Every episode is recorded as a :class:`~intercode_agents.trajectory.Trajectory` (strategy
``ServerOptions.strategy_label``: ``mcp`` or ``ray``), appended to ``trajectories.jsonl`` of the
record folder when there is one (an actor has none: it hands each record to its caller). With
several engines (``ServerOptions.engines``, ``--engines``) each episode's env gets the one engine set,
as the runner's envs do, so its sandboxes are placed over them and closing the env removes them on
whichever engine holds them.

**Turns.** With a turn limit (``max_turns``, ``--turns``), every ``act``, ``rollback`` and
``evaluate`` uses a turn, and once they are spent those calls are refused without running; a
``submit`` is always taken (the episode is then scored as it stands, as a strategy's forced submit).

**Scores before the submit.** ``evaluate`` is offered only when the operator switches it on
(``ServerOptions.evaluate``, ``--evaluate``): a score is feedback from the gold, and a client that may
ask for it at no cost turns the scorer into an oracle (eight candidates defined in one action, then
scored one by one until one earns 1.0). When it is on, each call uses a turn and is recorded as a
step of kind ``evaluate`` with its reward, and the record's context says the client could ask
(``evaluate: true``). Whatever a client is shown of a reward's parts, at ``evaluate`` or at
``submit``, passes through :func:`~intercode_agents.envs.reward_view.agent_parts`; the record keeps
them all.

**A client that goes away during ``start_episode``.** The start runs in a task of its own, so
cancelling the call (the SDK cancels a request whose HTTP client disconnected; a stdio server
stops when its client goes away) never interrupts the clean-up of a half-made episode, and an
episode whose start finished for a caller that is no longer there is ended at once, unrecorded: no
client saw its question, so it is no one's failure. The registry's close waits for starts in
flight. What no server can see is a client that goes away after its answer was sent: the TTL ends
that episode.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from langchain_core.language_models import BaseChatModel

from intercode_agents.envs import Env, make_env
from intercode_agents.envs.recorder import EpisodeRecorder
from intercode_agents.envs.reward_view import agent_parts
from intercode_agents.envs.steps import StepResult, Submit, read_action
from intercode_agents.errors import IntercodeError
from intercode_agents.guards import Guard, GuardPolicy
from intercode_agents.reward import REWARD_MODES
from intercode_agents.runner.run_dir import RecordWriter
from intercode_agents.sandbox import EngineSet
from intercode_agents.sandbox.cancelling import cancel_and_wait
from intercode_agents.spec import env_names
from intercode_agents.tools.observation import DEFAULT_OBSERVATION_LIMIT, model_view
from intercode_agents.trajectory import Trajectory

STRATEGY = "mcp"
CLIENT_GONE = "the client went away before it was given the episode's id"


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
    max_turns: int | None = None  # act, rollback and evaluate calls per episode (None: no limit)
    evaluate: bool = False  # offer evaluate: a score before the submit, which uses a turn and is recorded
    action_timeout: float | None = None
    observation_limit: int = DEFAULT_OBSERVATION_LIMIT
    guards: bool = False  # the SQL and Bash guards and automatic rollback
    rollback: bool = True  # the start checkpoint and the rollback tool
    critic_model: BaseChatModel | None = None
    max_vetoes: int = 2
    record_dir: Path | None = None
    client_label: str = "mcp-client"
    strategy_label: str = STRATEGY  # the records' strategy: who held the episodes
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
    recorder: EpisodeRecorder
    started: float
    last_used: float = field(default_factory=time.monotonic)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    turns_used: int = 0  # act, rollback and evaluate calls so far

    def touch(self) -> None:
        self.last_used = time.monotonic()

    @property
    def trajectory(self) -> Trajectory:
        return self.recorder.trajectory

    @property
    def turn(self) -> int:
        return self.recorder.turns + 1


class EpisodeRegistry:
    """The server's episodes (see the module docstring). Use it as ``async with``."""

    def __init__(self, options: ServerOptions | None = None) -> None:
        self.options = options or ServerOptions()
        self.episodes: dict[str, ServerEpisode] = {}
        self._starting = 0
        self._opening: set[asyncio.Task[Any]] = set()  # starts in flight, each in a task of its own
        self._ending: set[asyncio.Task[Any]] = set()  # episodes ended for callers that went away
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
        """End every episode (their containers are removed) and stop the reaper; starts in flight
        are waited for, and what they made is ended too."""
        self._closed = True
        if self._reaper is not None:
            await cancel_and_wait(self._reaper)
        while self._opening or self._ending:
            await asyncio.shield(asyncio.wait(self._opening | self._ending))
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
        opening = asyncio.create_task(self._open(env_name, task_id, reward), name="mcp-episode-start")
        self._starting += 1
        self._opening.add(opening)
        opening.add_done_callback(self._opened)
        try:
            episode, question = await asyncio.shield(opening)
        except asyncio.CancelledError:  # the caller went away: whatever the start makes is ended
            opening.add_done_callback(self._abandoned)
            raise
        except EpisodeError:
            raise
        except IntercodeError as exc:  # an unknown task, a task that cannot run here, a bad option
            raise EpisodeError(str(exc)) from exc
        return episode, question

    def _opened(self, opening: asyncio.Task[Any]) -> None:
        self._starting -= 1
        self._opening.discard(opening)

    def _abandoned(self, opening: asyncio.Task[Any]) -> None:
        """End the episode a start made for a caller that is gone (its id reached no one)."""
        if opening.cancelled() or opening.exception() is not None:
            return  # nothing was made (a failed start closes its own env)
        episode, _ = opening.result()
        if episode.id in self.episodes:
            ending = asyncio.create_task(self._end_quietly(episode.id), name="mcp-episode-abandoned")
            self._ending.add(ending)
            ending.add_done_callback(self._ending.discard)

    async def _end_quietly(self, episode_id: str) -> None:
        with contextlib.suppress(EpisodeError):  # ended meanwhile (the server's close)
            await self.end(episode_id, why=CLIENT_GONE, record=False)

    async def _open(self, env_name: str, task_id: str | None, reward: str) -> tuple[ServerEpisode, str]:
        overrides: dict[str, Any] = {"reward": reward}
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
            if self._closed:
                raise EpisodeError("the server is stopping")
        except BaseException:
            await env.close()
            raise
        episode_id = secrets.token_urlsafe(16)
        context = {
            "max_turns": self.options.max_turns,
            "observation_limit": self.options.observation_limit,
            "evaluate": self.options.evaluate,
        }
        recorder = EpisodeRecorder(
            env, strategy=self.options.strategy_label, model=self.options.client_label, context=context
        )
        recorder.started(question, info)
        episode = ServerEpisode(episode_id, env, guard, recorder, time.perf_counter())
        self.episodes[episode_id] = episode
        return episode, question

    async def end(
        self, episode_id: str, *, why: str = "ended by the client", record: bool = True
    ) -> Trajectory:
        """End an episode: record it (unless ``record`` is False: no client ever saw it) and remove
        its containers."""
        episode = self.episodes.pop(episode_id, None)
        if episode is None:
            raise EpisodeError(f"no episode {episode_id!r} to end")
        async with episode.lock:
            episode.trajectory.guards = episode.guard.summary()
            if episode.trajectory.reward is None:
                episode.recorder.failed("failed", f"not submitted: {why}")
                trajectory = episode.recorder.finish(settle=False)
            else:
                trajectory = episode.recorder.finish()
            try:
                await episode.env.close()
            finally:
                if record and self._writer is not None and episode.env.task is not None:
                    self._writer.write(trajectory)
        return trajectory

    # -- actions ------------------------------------------------------------------------------
    async def act(self, episode_id: str, action: str) -> dict[str, Any]:
        episode = self.get(episode_id)
        if not isinstance(action, str) or not action.strip():
            raise EpisodeError("the action is empty: pass the command or query to run as `action`")
        if isinstance(read_action(action), Submit):  # a client's text: say where submitting is
            raise EpisodeError("to finish, call the submit tool instead of running `submit`")
        async with episode.lock:
            self._check_running(episode)
            self._use_turn(episode)
            turn = episode.turn
            result: StepResult = await self._call(episode.guard.step(action, turn=turn))
            view = model_view(
                result.observation,
                self.options.observation_limit,
                exit_code=result.exit_code,
                timed_out=result.timed_out,
            )
            episode.recorder.step(result, action, turn=turn, shown=view.text, shown_truncated=view.truncated)
            return {
                "observation": view.text,
                "exit_code": result.exit_code,
                "errored": result.errored,
                "timed_out": result.timed_out,
                "output_truncated": result.output_truncated,
                "observation_truncated": view.truncated,
                "action_type": result.kind,
                "guard": None if result.guard is None else asdict(result.guard),
            } | self._budget(episode)

    async def evaluate(self, episode_id: str, answer: str | None) -> dict[str, Any]:
        """The score of the current state, as if submitted now; the episode goes on. It uses a turn
        and is recorded (a step of kind ``evaluate``); the server offers it only when switched on."""
        if not self.options.evaluate:
            raise EpisodeError("this server does not offer evaluate (its operator can: --evaluate)")
        episode = self.get(episode_id)
        async with episode.lock:
            self._check_running(episode, needs_task=True)
            self._use_turn(episode)
            turn, started = episode.turn, time.perf_counter()
            submission = self._answer(episode, answer) if episode.env.submit_takes_argument else None
            result = await self._call(episode.env.evaluate(submission))
            action = f"evaluate {submission}" if submission else "evaluate"
            step = episode.recorder.note("evaluate", action, f"Reward: {result.reward:g}", turn=turn)
            step.reward, step.duration_s = result.reward, time.perf_counter() - started
            return {
                "reward": result.reward,
                "parts": agent_parts(episode.env, result.parts),
                "corrupt": result.corrupt,
            } | self._budget(episode)

    async def submit(self, episode_id: str, answer: str | None) -> dict[str, Any]:
        episode = self.get(episode_id)
        async with episode.lock:
            self._check_running(episode, needs_task=True)
            answer = self._answer(episode, answer) if episode.env.submit_takes_argument else ""
            action = f"submit {answer}" if answer else "submit"
            result: StepResult = await self._call(episode.guard.submit(answer or ""))
            episode.recorder.step(result, action, turn=episode.turn)
            if result.kind == "vetoed":
                reasons = result.guard.veto if result.guard is not None else None
                return {
                    "submitted": False,
                    "vetoed": True,
                    "reasons": reasons,
                    "observation": result.observation,
                }
            return {
                "submitted": True,
                "reward": result.reward,
                "parts": agent_parts(episode.env, result.reward_parts),
                "corrupt": bool(result.reward_parts.get("corrupt")),
                "submission": result.submission,
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
            self._use_turn(episode)
            turn = episode.turn
            result: StepResult = await self._call(episode.guard.rollback_step(to))
            episode.recorder.step(result, f"rollback {to}", turn=turn)
            note = result.guard.rollback if result.guard is not None else None
            return {"observation": result.observation, "rollback": note} | self._budget(episode)

    @staticmethod
    def _answer(episode: ServerEpisode, answer: str | None) -> str:
        """The answer of an env whose submit takes one: the client's, else the task's entry point."""
        task = episode.env.task
        return answer or (str(task.meta.get("entry_point") or "") if task is not None else "")

    def _use_turn(self, episode: ServerEpisode) -> None:
        """Count one turn of ``episode``'s budget, or refuse the call once it is spent."""
        limit = self.options.max_turns
        if limit is not None and episode.turns_used >= limit:
            raise EpisodeError(
                f"the turn budget is spent ({limit} turns: act, rollback and evaluate each use one): "
                "call submit, which scores the episode as it stands"
            )
        episode.turns_used += 1

    def _budget(self, episode: ServerEpisode) -> dict[str, Any]:
        """What a client is told of its turn budget after a call that used a turn."""
        limit = self.options.max_turns
        left = None if limit is None else max(limit - episode.turns_used, 0)
        return {"turn": episode.turns_used, "turns_left": left, "turn_limit_reached": left == 0}

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

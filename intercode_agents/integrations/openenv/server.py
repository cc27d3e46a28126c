"""Our envs behind OpenEnv's own server library (openenv-core): ``intercode-agents serve openenv``.

One server serves one env (a shipped one or a user's YAML). A client, OpenEnv's ``GenericEnvClient``
or any of the frameworks that use it, opens a WebSocket session (``/ws``) and drives one episode at a
time in it:

- ``reset(task_id=...)``, or ``reset(selector="bash/mini/*", seed=3)`` to draw one (``seed`` and
  ``episode_id`` are OpenEnv's own reset arguments); the observation's ``text`` is the task's
  question and its ``info`` the task's public view;
- ``step({"action": "<command>"})`` runs a command; ``step({"action": "submit [answer]"})`` ends the
  episode with its reward and ``done``. Every other step has reward 0.0, and ``info`` carries the
  exit code and flags, and at the submit the reward parts an agent may see: never a gold, a test or a
  part that describes the gold (:class:`~intercode_agents.runner.rollout.Rollout` decides what a
  client sees, as it does for every RL front end);
- ``state()`` gives the episode's id, its task and its turn (``step_count``).

Sessions and sandboxes. Each WebSocket connection is a session with an env of its own, made lazily at
its first reset on the server's event loop, where all sessions share the warm sandbox pools
(``--max-sessions`` of them at once). The session ends when the client closes it, disconnects, is
killed (the socket closes) or freezes (uvicorn's keep-alive pings give up after about 40 s), or after
``--idle-timeout`` seconds without a message (OpenEnv's reaper); then its episode is recorded, unsubmitted,
and its sandbox removed. A step that outlives its client still runs to its end first.

Why only the WebSocket. OpenEnv's HTTP ``/reset`` and ``/step`` build a new env for every request and
close it after answering, so no episode can span two of them: for our envs a ``/reset`` would start a
sandbox only to remove it, and a ``/step`` would find none. The server therefore runs in OpenEnv's
production mode, which leaves those routes out (``/ws``, ``/health``, ``/schema``, ``/metadata`` and
``/mcp`` remain), and ``openenv validate --url`` accepts it as such.

Threads. OpenEnv makes a session's env in a worker thread, awaits ``reset_async`` and ``step_async``
on its event loop, and calls the synchronous ``close`` from the session's worker thread, or on the
event loop itself after a stateless request (``/metadata``). ``close`` therefore hands the clean-up
to the loop and waits for it from a worker thread, but only schedules it on the loop's own thread,
where waiting would deadlock the server.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from openenv.core.env_server import Action, Environment, HTTPEnvServer, Observation, State
from openenv.core.env_server.types import ConcurrencyConfig, EnvironmentMetadata
from pydantic import Field

from intercode_agents import __version__
from intercode_agents.runner.rollout import Rollout, RolloutError, RolloutOptions
from intercode_agents.runner.run_dir import RecordWriter
from intercode_agents.spec import EnvSpec, load_spec
from intercode_agents.trajectory import Trajectory

API_VERSION = "1.0.0"  # the version of OpenEnv's HTTP API this server speaks (openenv-http/1.x)
CLOSE_WAIT_S = 120.0


class IntercodeAction(Action):
    """A command in the env's language, or ``submit`` (with the answer, for Python and CTF)."""

    action: str = Field(description="a command (Bash, SQL, Python...) or `submit [answer]` to finish")


class IntercodeObservation(Observation):
    """What a step gives: ``text`` (the output as a model sees it; the question after a reset) and
    ``info`` (the step's flags; at a submit, the reward parts an agent may see)."""

    text: str = ""
    info: dict[str, Any] = Field(default_factory=dict)


@dataclass
class ServerSettings:
    """What every session of one server gets."""

    env: str  # an env name or an env YAML's path
    rollout: RolloutOptions
    record_dir: Path | None = None
    max_sessions: int = 32
    idle_timeout_s: float | None = 600.0
    spec: EnvSpec = field(init=False)
    live: set[Rollout] = field(init=False, default_factory=set)  # the sessions' rollouts
    _writer: RecordWriter | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.spec = load_spec(self.env)  # a bad env is an error before the server starts

    def record(self, trajectory: Trajectory) -> None:
        """Append a finished episode to ``record_dir/trajectories.jsonl`` (on the server's loop)."""
        if self.record_dir is None:
            return
        if self._writer is None:
            self.record_dir.mkdir(parents=True, exist_ok=True)
            self._writer = RecordWriter(self.record_dir / "trajectories.jsonl")
        self._writer.write(trajectory)

    async def close_all(self) -> None:
        """End every session's episode and remove its sandboxes (the server is stopping)."""
        await asyncio.gather(*(r.close("the server is stopping") for r in list(self.live)))
        self.live.clear()
        if self._writer is not None:
            self._writer.close()


class IntercodeEnvironment(Environment[IntercodeAction, IntercodeObservation, State]):
    """One session: one of our envs, episode after episode (see the module docstring)."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, *, settings: ServerSettings) -> None:
        super().__init__()  # cheap: OpenEnv also makes one for each stateless request
        self.settings = settings
        self._rollout: Rollout | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._ended: str | None = None
        self._closing: set[asyncio.Task[Any]] = set()

    # The synchronous methods OpenEnv requires; the server uses the async ones below.
    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> IntercodeObservation:
        raise NotImplementedError("the server awaits reset_async")

    def step(
        self, action: IntercodeAction, timeout_s: float | None = None, **kwargs: Any
    ) -> IntercodeObservation:
        raise NotImplementedError("the server awaits step_async")

    async def reset_async(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        task_id: str | None = None,
        selector: str | None = None,
        **kwargs: Any,
    ) -> IntercodeObservation:
        if kwargs:
            raise RolloutError(
                f"unknown reset arguments {sorted(kwargs)}; reset takes task_id, selector, seed"
            )
        rollout = self._session()
        turn = await rollout.reset(task_id, selector=selector, seed=seed, episode_id=episode_id)
        return IntercodeObservation(text=turn.observation, info=turn.info, reward=0.0, done=False)

    async def step_async(
        self, action: IntercodeAction, timeout_s: float | None = None, **kwargs: Any
    ) -> IntercodeObservation:
        turn = await self._session().act(action.action)
        return IntercodeObservation(text=turn.observation, info=turn.info, reward=turn.reward, done=turn.done)

    @property
    def state(self) -> State:
        now = self._rollout.state() if self._rollout is not None else {}
        return State(
            episode_id=now.get("episode_id"),
            step_count=now.get("turn", 0),
            task_id=now.get("task_id"),
            turn=now.get("turn", 0),
            done=now.get("done", True),
            max_turns=self.settings.rollout.max_turns,
        )

    def get_metadata(self) -> EnvironmentMetadata:
        spec = self.settings.spec
        return EnvironmentMetadata(
            name=f"intercode-{spec.name}",
            description=spec.description or f"the {spec.name} env of intercode-agents",
            version=__version__,
            author="intercode-agents",
        )

    def close(self) -> None:
        rollout, loop = self._rollout, self._loop
        self._rollout, self._ended = None, self._ended or "the session was closed"
        if rollout is None or loop is None or loop.is_closed():
            return
        closing = self._close_rollout(rollout)
        if threading.get_ident() == self._loop_thread:  # on the loop: waiting here would block it
            task = loop.create_task(closing)
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)
        else:
            asyncio.run_coroutine_threadsafe(closing, loop).result(CLOSE_WAIT_S)

    # -- internals -----------------------------------------------------------------------------
    def _session(self) -> Rollout:
        """The session's rollout, made on the server's loop at the first reset."""
        if self._ended is not None:
            raise RolloutError(f"this session is over ({self._ended}); open a new one")
        if self._rollout is None:
            self._loop, self._loop_thread = asyncio.get_running_loop(), threading.get_ident()
            self._rollout = Rollout(self.settings.env, self.settings.rollout, on_record=self.settings.record)
            self.settings.live.add(self._rollout)
        return self._rollout

    async def _close_rollout(self, rollout: Rollout) -> None:
        try:
            await rollout.close("the client's session ended")
        finally:
            self.settings.live.discard(rollout)


def build_app(settings: ServerSettings) -> FastAPI:
    """The FastAPI application serving ``settings.env`` with OpenEnv's server in production mode."""
    app = FastAPI(
        title=f"intercode-agents: {settings.spec.name}",
        version=API_VERSION,
        description=f"{settings.spec.description}\n\nOpenEnv sessions over the WebSocket /ws.",
    )
    factory = functools.partial(IntercodeEnvironment, settings=settings)
    concurrency = ConcurrencyConfig(
        max_concurrent_envs=settings.max_sessions, session_timeout=settings.idle_timeout_s
    )
    HTTPEnvServer(
        factory, IntercodeAction, IntercodeObservation, concurrency_config=concurrency
    ).register_routes(app, mode="production")
    app.router.on_shutdown.append(settings.close_all)
    return app


def serve(settings: ServerSettings, *, host: str = "127.0.0.1", port: int = 8000) -> None:
    """Serve until stopped (Ctrl-C, SIGTERM); every session's sandbox is removed on the way out."""
    import uvicorn

    uvicorn.run(build_app(settings), host=host, port=port, log_level="warning")

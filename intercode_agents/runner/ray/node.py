"""The actor on each node of a Ray cluster: it plays episodes on that node's own engines.

A run on Ray (:mod:`intercode_agents.runner.ray.driver`) starts one :class:`NodeActor` on every node
that offers the resource ``intercode_slots``, pinned there by Ray's node affinity. The actor drives
the engines of its node only (the node's ``$INTERCODE_ENGINES``, else its local Docker engine, as
``make_env`` resolves them there), so no engine is ever reached over the network, and it keeps what
makes a local run fast: the engine's fast paths, the warm sandbox pools its envs share (one event
loop), and the Bash gold facts in the node's own cache. Its containers carry the run's label
(``INTERCODE_AGENTS_RUN_ID``, set by the driver), so the run's end, or ``intercode-agents cleanup
--ray`` after a crash, finds them on every node.

The class knows nothing of Ray but where it asks for its node's ID: the driver makes it an actor
(``ray.remote(NodeActor)``), and every method is async and takes and returns plain values (a
:class:`Setup`, tasks and trajectories travel pickled; the step-level calls take strings and give
dicts), so one node serves many calls at once.

**Playing a run's episodes** (the driver's calls). :meth:`prepare` is sent once per run (a
:class:`Setup`: the env, its options and the player) and checks, before any episode, that the node's
engines answer and hold every image the run needs, then builds the player here (a strategy
player's model is resolved, and a local model's weights loaded, on this node). :meth:`play` plays one
episode on one of the node's envs and returns its record, naming this node and its engine;
:meth:`play_group` plays ``k`` episodes of one task at once on the node (a group for
group-relative advantages, as GRPO takes them) and returns their records in sample order;
:meth:`release` closes the envs of a finished run's setup.

**Step-level access** (a trainer's workers: an RL framework's rollout workers on the cluster). The
same episode calls as the MCP server, keyed by an ``episode_id`` (the
:class:`~intercode_agents.runner.episode_registry.EpisodeRegistry` behind both):

- ``start(env, task_id=None, reward_mode=None) -> {"episode_id", "question", "task", "node", "engine"}``
- ``act(episode_id, action) -> {"observation", "exit_code", "errored", "timed_out", ..., "turn"}``
- ``evaluate(episode_id, answer=None) -> {"reward", "parts", "corrupt", "turn", ...}`` (when the
  options allow it: :attr:`ServerOptions.evaluate`)
- ``submit(episode_id, answer=None) -> {"submitted", "reward", "parts", "corrupt", "submission"}``
- ``end(episode_id) -> the episode's trajectory record (a dict)``; its containers are removed.

An id is valid only on the actor that made it: a worker keeps the actor handle with the id. A bad id
or argument raises :class:`~intercode_agents.runner.episode_registry.EpisodeError`, which a Ray
caller catches as such (Ray's task error is also an instance of the error it carries). Text is read
as a command here; a framework that gets text from a model reads it with
:func:`~intercode_agents.envs.steps.read_action` and calls ``submit`` for a submit.
"""

from __future__ import annotations

import asyncio
import functools
import os
import pickle
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from intercode_agents.datasets import Task, get_task
from intercode_agents.envs import Env, make_env
from intercode_agents.errors import ConfigError, IntercodeError
from intercode_agents.runner.episode_registry import EpisodeRegistry, ServerOptions
from intercode_agents.runner.players import Player, PlayerRecipe
from intercode_agents.runner.preflight import image_ids, load_local_model
from intercode_agents.sandbox import RUN_ID, resolve_engines
from intercode_agents.spec import load_spec

STRATEGY = "ray"  # the records' strategy of episodes held for a trainer's workers
F = TypeVar("F", bound=Callable[..., Awaitable[Any]])


def portable(exc: BaseException) -> BaseException:
    """``exc`` as an error that reaches the caller intact: Ray pickles what a method raises, and an
    error whose class builds its message in ``__init__`` (ImageMissing, EngineUnavailable) would be
    rebuilt from its message as if that were its argument. Such an error goes as a ConfigError
    with its text; one that survives the trip (ConfigError, EpisodeError, ...) goes as it is."""
    if not isinstance(exc, Exception):
        return exc
    try:
        copy = pickle.loads(pickle.dumps(exc))
        if type(copy) is type(exc) and str(copy) == str(exc):
            return exc
    except Exception:
        pass
    text = str(exc) if isinstance(exc, IntercodeError) else f"{type(exc).__name__}: {exc}"
    return ConfigError(text)


def _errors_travel(method: F) -> F:
    """Raise what ``method`` raises as :func:`portable` makes it."""

    @functools.wraps(method)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return await method(*args, **kwargs)
        except Exception as exc:
            travelling = portable(exc)
            if travelling is exc:
                raise
            raise travelling from None

    return wrapper  # type: ignore[return-value]


@dataclass(frozen=True)
class Setup:
    """What a node needs to play one run's episodes, sent once to each node's actor.

    ``env`` is an env's name or the path of a user's env YAML (then on every node at that path);
    ``options`` are ``make_env``'s (reward, execution, ...), never an engine: the node has its own.
    ``player`` travels as it is, or as the recipe a node builds it from (see
    :mod:`intercode_agents.runner.players`). ``probes``: one task per image the episodes run on, for
    the image check."""

    key: str
    env: str
    options: dict[str, Any]
    player: Player | PlayerRecipe
    probes: tuple[Task, ...]
    execution: str = "session"


@dataclass
class _Prepared:
    setup: Setup
    player: Player
    image_ids: dict[str, str]
    idle: list[Env] = field(default_factory=list)  # envs between episodes (their pools stay warm)
    made: list[Env] = field(default_factory=list)


class NodeActor:
    """One per node and run (see the module docstring). ``slots``: the episodes the driver plays here
    at once, the node's ``intercode_slots``; ``step_options`` bound the step-level episodes (by
    default as many as the slots, no turn limit, no ``evaluate``)."""

    def __init__(self, slots: int = 1, step_options: ServerOptions | None = None) -> None:
        self.slots = slots
        self.step_options = step_options or ServerOptions(
            max_episodes=slots, client_label="ray-client", strategy_label=STRATEGY
        )
        self.engines = resolve_engines(None)
        self.engine = f"{','.join(b.name for b in self.engines.backends)}@{socket.gethostname()}"
        self._setups: dict[str, _Prepared] = {}
        self._playing: set[asyncio.Task[Any]] = set()
        self._registry: EpisodeRegistry | None = None
        self._registry_lock: asyncio.Lock | None = None

    @property
    def node(self) -> str:
        import ray

        return ray.get_runtime_context().get_node_id()

    async def info(self) -> dict[str, Any]:
        """Who this actor is: its node, host, engine, process, slots, run label and CPU seconds used."""
        return {
            "node": self.node,
            "host": socket.gethostname(),
            "engine": self.engine,
            "pid": os.getpid(),
            "slots": self.slots,
            "run_id": RUN_ID,
            "cpu_s": time.process_time(),
        }

    # -- a run's episodes ---------------------------------------------------------------------------
    @_errors_travel
    async def prepare(self, setup: Setup) -> dict[str, str]:
        """Check the node's engines hold the run's images and build its player here; return the
        images' IDs (short name -> ID) on this node. Raises ImageMissing naming the image (the
        driver adds the node), EngineUnavailable, or the player's ConfigError."""
        if setup.key in self._setups:
            return self._setups[setup.key].image_ids
        load_spec(setup.env)  # a user's env YAML must be on this node (a clear error if not)
        ids = await image_ids(setup.probes, execution=setup.execution, engines=self.engines)
        player = setup.player.build() if isinstance(setup.player, PlayerRecipe) else setup.player
        await load_local_model(getattr(player, "chat_model", None))
        self._setups[setup.key] = _Prepared(setup, player, ids)
        return ids

    @_errors_travel
    async def play(self, key: str, task: Task, seed: int | None) -> dict[str, Any]:
        """Play one episode of the setup ``key`` and return its record (a Trajectory as a dict)."""
        prepared = self._setups[key]
        me = asyncio.current_task()
        if me is not None:
            self._playing.add(me)
        env = prepared.idle.pop() if prepared.idle else await self._new_env(prepared)
        try:
            traj = await prepared.player.play(env, task, seed)
        finally:
            prepared.idle.append(env)
            if me is not None:
                self._playing.discard(me)
        traj.node, traj.engine = self.node, self.engine
        if task.image in prepared.image_ids:
            traj.image_id = prepared.image_ids[task.image]
        return traj.model_dump(mode="json")

    @_errors_travel
    async def play_group(self, key: str, task_id: str, k: int, seed: int = 0) -> list[dict[str, Any]]:
        """Play ``k`` episodes of ``task_id`` at once with the setup ``key``'s player, a group for
        group-relative advantages (as :func:`~intercode_agents.runner.groups.play_group` plays one
        locally: seeds ``seed`` to ``seed + k - 1``, epochs 1 to k), each on its own env of this node;
        return their records in sample order, each naming this node and its engine."""
        if not isinstance(k, int) or k < 1:
            raise ConfigError(f"a group has at least one episode, got k={k!r}")
        data_root = self._setups[key].setup.options.get("data_root")
        task = await asyncio.to_thread(get_task, task_id, data_root=data_root)
        if task.unavailable:
            raise ConfigError(f"task {task.id} cannot run here: {task.unavailable}")
        records = await asyncio.gather(*(self.play(key, task, seed + i) for i in range(k)))
        for epoch, record in enumerate(records, start=1):
            record["epoch"] = epoch
        return list(records)

    async def _new_env(self, prepared: _Prepared) -> Env:
        env = make_env(prepared.setup.env, **prepared.setup.options)
        prepared.made.append(env)
        await env.start()
        return env

    async def release(self, key: str) -> None:
        """Close the envs of the setup ``key`` (its run is over): their containers are removed."""
        prepared = self._setups.pop(key, None)
        if prepared is not None:
            await asyncio.gather(*(env.close() for env in prepared.made), return_exceptions=True)

    async def close(self) -> dict[str, Any]:
        """End everything this actor holds: episodes in flight are cancelled, step-level episodes
        ended, every env closed (their containers removed). Returns :meth:`info` as it ends."""
        for task in list(self._playing):
            task.cancel()
        await asyncio.gather(*self._playing, return_exceptions=True)
        if self._registry is not None:
            await self._registry.close()
        for key in list(self._setups):
            await self.release(key)
        return await self.info()

    # -- step-level access --------------------------------------------------------------------------
    async def _episodes(self) -> EpisodeRegistry:
        if self._registry_lock is None:
            self._registry_lock = asyncio.Lock()
        async with self._registry_lock:
            if self._registry is None:
                registry = EpisodeRegistry(self.step_options)
                await registry.__aenter__()
                self._registry = registry
        return self._registry

    @_errors_travel
    async def start(
        self, env: str, task_id: str | None = None, reward_mode: str | None = None
    ) -> dict[str, Any]:
        """Start an episode of ``task_id`` (None: a live sandbox of the env) on this node."""
        registry = await self._episodes()
        episode, question = await registry.start(env, task_id, reward_mode)
        task = episode.env.task
        return {
            "episode_id": episode.id,
            "question": question,
            "task": task.public().model_dump() if task is not None else None,
            "node": self.node,
            "engine": self.engine,
        }

    @_errors_travel
    async def act(self, episode_id: str, action: str) -> dict[str, Any]:
        return await (await self._episodes()).act(episode_id, action)

    @_errors_travel
    async def evaluate(self, episode_id: str, answer: str | None = None) -> dict[str, Any]:
        return await (await self._episodes()).evaluate(episode_id, answer)

    @_errors_travel
    async def submit(self, episode_id: str, answer: str | None = None) -> dict[str, Any]:
        return await (await self._episodes()).submit(episode_id, answer)

    @_errors_travel
    async def end(self, episode_id: str) -> dict[str, Any]:
        """End the episode and return its record; its containers are removed."""
        traj = await (await self._episodes()).end(episode_id)
        traj.node, traj.engine = self.node, self.engine
        return traj.model_dump(mode="json")

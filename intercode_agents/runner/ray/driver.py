"""The driver's side of a run on a Ray cluster: one actor per node, one queue of episodes, one writer.

:class:`RayRun` connects to the cluster, starts a :class:`~intercode_agents.runner.ray.node.NodeActor`
on every node that offers the resource ``intercode_slots`` (pinned by Ray's node affinity and holding
all of the node's slots: Ray's resources, not a placement algorithm of ours, say where work goes), and
plays a run's queue of episodes on them: a node plays as many at once as its slots. The finished
trajectories come back here, and the caller (``run_episodes``, the runner's one seam) hands them to
the run directory's one writer: records, resume, the run lock and the report are a local run's.

- **Checks first.** Before any episode, every node checks that its engines hold the run's images
  and builds the run's player there (:meth:`RayRun.prepare`); a node that lacks an image is named
  with the image, and the nodes must hold the same build of each image (its ID), so that a record's
  ``image_id`` means one thing.
- **A node lost.** An actor call that fails because the actor is gone (its node died, its process
  was killed) makes that attempt an ``env_error`` naming the node, and the node is dropped from the
  run; the retry policy of a local run (:mod:`intercode_agents.runner.retries`) plays the episode
  again, on whichever node has a free slot, so every task is recorded once with its failed attempts
  in ``retries``.
- **Nodes that join.** The cluster's node list is read every ``poll_s`` seconds; a new node offering
  ``intercode_slots`` gets an actor, is prepared for the run's setups and then takes work.
- **Nothing left behind.** At the end (normal, error or Ctrl-C) every actor closes its envs, is
  ended, and every node that answers is swept of the run's containers by label
  (:mod:`intercode_agents.runner.ray.cleanup`). After a crash of the driver, Ray ends its actors, and
  ``intercode-agents cleanup --ray`` removes what they held.

Ray is imported only here and only when a run asks for it (``--ray``, ``EvalConfig(ray=...)``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console

from intercode_agents.datasets import Task, get_task
from intercode_agents.errors import ConfigError, EngineUnavailable, IntercodeError
from intercode_agents.images.catalog import TAG_ENV
from intercode_agents.paths import data_dir
from intercode_agents.runner.episode_registry import ServerOptions
from intercode_agents.runner.players import HumanPlayer, Player, PlayerRecipe, StrategyPlayer
from intercode_agents.runner.ray.node import NodeActor, Setup
from intercode_agents.runner.retries import RetryPolicy, play_with_retries
from intercode_agents.sandbox.config import RUN_ID_ENV
from intercode_agents.spec import load_spec
from intercode_agents.trajectory import Trajectory

SLOTS = "intercode_slots"  # the resource a node offers: the episodes it may play at once
ADDRESS_ENV = "RAY_ADDRESS"


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError("--ray needs Ray: pip install 'intercode-agents[ray]'") from None
    return ray


def _connect(ray: Any, address: str) -> bool:
    """Connect this process to the cluster at ``address`` unless it is connected; say whether it
    connected here (then it disconnects at the end)."""
    if ray.is_initialized():
        return False
    try:
        ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
    except ConnectionError as exc:
        raise ConfigError(
            f"no Ray cluster answers at {address}: {exc} Start one "
            f"(`ray start --head --resources='{{\"{SLOTS}\": 8}}'`) or pass --ray ADDRESS."
        ) from None
    return True


def _on_node(ray: Any, fn: Callable[..., Any], node_id: str) -> Any:
    """``fn`` as a Ray task pinned to the node ``node_id`` (no CPU asked: clean-up is I/O)."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    strategy = NodeAffinitySchedulingStrategy(node_id, soft=False)
    return ray.remote(fn).options(num_cpus=0, scheduling_strategy=strategy)


def _slot_nodes(ray: Any) -> list[str]:
    """The IDs of the live nodes that offer slots."""
    return [e["NodeID"] for e in ray.nodes() if e.get("Alive") and e.get("Resources", {}).get(SLOTS)]


def clean_cluster(
    address: str = "", *, include_live_runs: bool = False, run_id: str | None = None
) -> list[dict[str, Any]]:
    """``intercode-agents cleanup --ray``: on every live node offering slots, remove the containers
    whose maker is gone (all of them with ``include_live_runs``; only the run ``run_id``'s when it
    is given); one result per node."""
    from intercode_agents.runner.ray.cleanup import clean_node

    ray = _import_ray()
    address = address or os.environ.get(ADDRESS_ENV) or "auto"
    connected_here = _connect(ray, address)
    try:
        nodes = _slot_nodes(ray)
        refs = [_on_node(ray, clean_node, node).remote(include_live_runs, run_id) for node in nodes]
        results = []
        for node, ref in zip(nodes, refs, strict=True):
            try:
                results.append({"node": node, **ray.get(ref, timeout=300)})
            except ray.exceptions.RayError as exc:
                results.append({"node": node, "host": None, "removed": 0, "error": str(_cause(exc))})
        return results
    finally:
        if connected_here:
            ray.shutdown()


def travelling(player: Player) -> Player | PlayerRecipe:
    """What is sent to the nodes for ``player`` (see :mod:`intercode_agents.runner.players`), or a
    ConfigError saying why it cannot go (checked before any actor starts)."""
    ray = _import_ray()
    if isinstance(player, HumanPlayer):
        raise ConfigError("--model human plays at this terminal: it cannot run on Ray")
    sent: Player | PlayerRecipe = player
    if isinstance(player, StrategyPlayer):
        if player.recipe is None:
            raise ConfigError("a strategy player not made by make_player cannot be rebuilt on Ray nodes")
        sent = player.recipe.anchored()
    try:
        ray.cloudpickle.dumps(sent)
    except Exception as exc:
        raise ConfigError(
            f"the run's player cannot be sent to the Ray nodes ({type(exc).__name__}: {exc}); give the "
            "model as a spec (provider:model, local, PATH.py:NAME) so that each node makes its own"
        ) from None
    return sent


async def _awaited(ref: Any, seconds: float | None = None) -> Any:
    """A Ray call's answer, within ``seconds`` (TimeoutError past them)."""
    async with asyncio.timeout(seconds):
        return await ref


def _cause(exc: BaseException) -> BaseException:
    """The error a Ray task raised on its node (Ray wraps it), or ``exc``."""
    cause = getattr(exc, "cause", None)
    return cause if isinstance(cause, BaseException) else exc


@dataclass(eq=False)
class Node:
    """A node of the cluster as the run sees it."""

    id: str
    address: str
    slots: int
    state: str = "starting"  # starting, up, lost (its actor went away), refused (not used: see note)
    actor: Any = None
    host: str | None = None
    engine: str | None = None
    pid: int | None = None
    note: str | None = None
    episodes: int = 0  # attempts it returned
    cpu_s: float | None = None  # the actor process's CPU seconds, read as it closed
    prepared: dict[str, dict[str, str]] = field(default_factory=dict)  # setup key -> image IDs

    @property
    def label(self) -> str:
        return f"node {self.id[:8]} ({self.host or self.address})"

    def describe(self) -> dict[str, Any]:
        return {
            "node": self.id,
            "host": self.host or self.address,
            "engine": self.engine,
            "slots": self.slots,
            "state": self.state,
            "episodes": self.episodes,
            "note": self.note,
        }


@dataclass
class _SetupEntry:
    setup: Setup
    player: Player  # kept, so that the key built from its id stays its own
    strategy: str
    model: str


class RayRun:
    """A run's actors on a Ray cluster; use it as ``async with`` (see the module docstring).

    ``address``: "" for Ray's own resolution (``$RAY_ADDRESS``, else ``auto``), or the address. A
    process already connected to Ray (a trainer's driver) uses its connection and keeps it.
    ``step_options`` bound the step-level episodes of each actor. ``start_timeout_s``: how long a node's
    actor may take to start (its slots held by another run, say) before the node is left out;
    ``grace_s``: how long the run waits for a node to (re)join once none is up.
    """

    def __init__(
        self,
        address: str = "",
        *,
        step_options: ServerOptions | None = None,
        console: Console | None = None,
        start_timeout_s: float = 120.0,
        poll_s: float = 2.0,
        grace_s: float = 60.0,
    ) -> None:
        self.address = address or os.environ.get(ADDRESS_ENV) or "auto"
        self.step_options = step_options
        self.console = console or Console(stderr=True)
        self.start_timeout_s, self.poll_s, self.grace_s = start_timeout_s, poll_s, grace_s
        self.run_id = f"ray-{uuid.uuid4().hex[:12]}"  # the label of every container of this run
        self.nodes: dict[str, Node] = {}
        self.swept: dict[str, dict[str, Any]] = {}
        self._ray: Any = None
        self._connected_here = False
        self._free: deque[Node] = deque()  # one entry per free slot
        self._changed = asyncio.Condition()
        self._none_up_since: float | None = None
        self._setups: dict[tuple[Any, ...], _SetupEntry] = {}
        self._count = 0
        self._groups = 0  # groups played (play_group), to send the next to the next node
        self._background: set[asyncio.Task[Any]] = set()

    # -- the cluster ---------------------------------------------------------------------------------
    async def __aenter__(self) -> RayRun:
        self._ray = _import_ray()
        self._connect()
        try:
            found = self._listed()
            if not found:
                raise ConfigError(
                    f"no node of the Ray cluster at {self.address} offers the resource {SLOTS}: start the "
                    f"nodes with `ray start --address=HEAD:6379 --resources='{{\"{SLOTS}\": 8}}'`"
                )
            await asyncio.gather(*(self._start(node) for node in found))
            for node in self.up:
                await self._add_slots(node)
            if not self.up:
                problems = "; ".join(f"{n.label}: {n.note}" for n in self.nodes.values())
                where = f"the Ray cluster at {self.address}"
                raise EngineUnavailable(f"no node's actor started on {where}: {problems}")
            for node in self.nodes.values():
                if node.state != "up":
                    self._say(f"{node.label} is left out: {node.note}")
            self._spawn(self._watch())
        except BaseException:
            await self.close()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _connect(self) -> None:
        self._connected_here = _connect(self._ray, self.address)

    def _listed(self) -> list[Node]:
        """Nodes alive now that offer slots and are new to the run."""
        found = []
        for entry in self._ray.nodes():
            slots = int(entry.get("Resources", {}).get(SLOTS, 0))
            if entry.get("Alive") and slots > 0 and entry["NodeID"] not in self.nodes:
                node = Node(entry["NodeID"], entry.get("NodeManagerAddress", "?"), slots)
                self.nodes[node.id] = node
                found.append(node)
        return found

    def _dead(self) -> set[str]:
        return {e["NodeID"] for e in self._ray.nodes() if not e.get("Alive")}

    @property
    def up(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.state == "up"]

    def actors(self) -> list[tuple[Node, Any]]:
        """The live actors with their nodes: a trainer's workers call their step-level methods."""
        return [(n, n.actor) for n in self.up]

    def describe(self) -> list[dict[str, Any]]:
        """Each node's state, slots and the attempts it played (for run summaries)."""
        return [n.describe() for n in self.nodes.values()]

    def _say(self, text: str) -> None:
        self.console.print(f"ray: {text}", highlight=False, soft_wrap=True)

    def _spawn(self, coro: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _start(self, node: Node) -> None:
        """Start ``node``'s actor; it is up once it answers (else left out, with the reason)."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        env_vars = {RUN_ID_ENV: self.run_id}
        if os.environ.get(TAG_ENV):
            env_vars[TAG_ENV] = os.environ[TAG_ENV]  # the nodes run the images the driver names
        node.actor = (
            self._ray.remote(NodeActor)
            .options(
                name=f"intercode-agents-{self.run_id}-{node.id[:16]}",
                num_cpus=0,
                resources={SLOTS: node.slots},
                scheduling_strategy=NodeAffinitySchedulingStrategy(node.id, soft=False),
                max_restarts=0,
                runtime_env={"env_vars": env_vars},
            )
            .remote(node.slots, self.step_options)
        )
        try:
            info = await _awaited(node.actor.info.remote(), self.start_timeout_s)
        except TimeoutError:
            late = f"its actor did not start within {self.start_timeout_s:g} s ({SLOTS} held by another run?)"
            self._refuse(node, late)
            return
        except self._ray.exceptions.RayError as exc:
            self._refuse(node, f"its actor did not start: {_cause(exc)}")
            return
        node.host, node.engine, node.pid = info["host"], info["engine"], info["pid"]
        node.state = "up"
        self._none_up_since = None

    def _refuse(self, node: Node, why: str) -> None:
        node.state, node.note = "refused", why
        self._kill(node)

    def _kill(self, node: Node) -> None:
        if node.actor is not None:
            with contextlib.suppress(Exception):
                self._ray.kill(node.actor, no_restart=True)

    async def _lose(self, node: Node, why: str) -> None:
        """Drop a node whose actor went away; its episodes in flight become env errors (retried)."""
        if node.state != "up":
            return
        node.state, node.note = "lost", why
        self._kill(node)
        self._say(f"{node.label} was lost ({why}); its episodes in flight are played again on the others")
        if not self.up:
            self._none_up_since = time.monotonic()
        async with self._changed:
            self._changed.notify_all()

    async def _watch(self) -> None:
        """Follow the cluster: nodes that joined get an actor, nodes that died are dropped."""
        while True:
            await asyncio.sleep(self.poll_s)
            try:
                joined = await asyncio.to_thread(self._listed)
                dead = await asyncio.to_thread(self._dead)
            except Exception:  # the cluster's state is read again at the next tick
                continue
            for node in list(self.nodes.values()):
                if node.id in dead and node.state == "up":
                    await self._lose(node, "Ray reports the node dead")
            for node in joined:
                self._spawn(self._join(node))
            async with self._changed:
                self._changed.notify_all()  # waiters look again (a grace period may be over)

    async def _join(self, node: Node) -> None:
        await self._start(node)
        if node.state != "up":
            self._say(f"{node.label} joined but is left out: {node.note}")
            return
        for entry in list(self._setups.values()):
            problem = await self._prepare_on(node, entry.setup)
            problem = problem or self._disagreement(entry.setup.key, [node])
            if problem:
                self._refuse(node, problem)
                self._say(f"{node.label} joined but is left out: {problem}")
                return
        self._say(f"{node.label} joined with {node.slots} slots")
        await self._add_slots(node)

    async def _add_slots(self, node: Node) -> None:
        async with self._changed:
            self._free.extend([node] * node.slots)
            self._changed.notify_all()

    # -- a run's setup --------------------------------------------------------------------------------
    def _setup(
        self, env: str, options: dict[str, Any], player: Player, tasks: Iterable[Task], execution: str
    ) -> _SetupEntry:
        options = {k: v for k, v in options.items() if k != "backend"}  # a node drives its own engines
        spec = load_spec(env)
        if spec.path.parent != data_dir("envs"):
            env = str(spec.path)  # a user's env: its YAML, at the same path on every node
        key = (env, repr(sorted(options.items())), id(player), execution)
        if key not in self._setups:
            self._count += 1
            probes = {(t.env, t.image): t for t in tasks}
            sent = travelling(player)
            setup = Setup(f"s{self._count}", env, options, sent, tuple(probes.values()), execution)
            self._setups[key] = _SetupEntry(setup, player, player.strategy, player.model)
        return self._setups[key]

    async def prepare(
        self,
        env: str,
        options: dict[str, Any],
        player: Player,
        tasks: Sequence[Task],
        execution: str = "session",
    ) -> dict[str, str]:
        """Send the run's setup to every node, which checks its images and builds the player; return
        the images' IDs (the same on every node, or a ConfigError naming the nodes that differ)."""
        entry = self._setup(env, options, player, tasks, execution)
        nodes = self.up
        problems = await asyncio.gather(*(self._prepare_on(node, entry.setup) for node in nodes))
        found = [p for p in problems if p]
        if found:
            raise ConfigError("; ".join(found))
        if not self.up:
            raise EngineUnavailable("every Ray node was lost while the run was being prepared")
        problem = self._disagreement(entry.setup.key, self.up)
        if problem:
            raise ConfigError(problem)
        return dict(self.up[0].prepared[entry.setup.key])

    async def play_group(
        self,
        env: str,
        task_id: str,
        k: int,
        player: Player,
        *,
        seed: int = 0,
        options: dict[str, Any] | None = None,
    ) -> list[Trajectory]:
        """Play ``k`` episodes of ``task_id`` at once on one node, a group for group-relative
        advantages; their records in sample order. The setup is prepared on every node first, as for
        a run; successive groups go to the nodes in turn."""
        task = await asyncio.to_thread(get_task, task_id)
        await self.prepare(env, options or {}, player, [task])
        entry = self._setup(env, options or {}, player, [task], "session")
        self._groups += 1
        node = self.up[self._groups % len(self.up)]
        records = await _awaited(node.actor.play_group.remote(entry.setup.key, task_id, k, seed))
        return [Trajectory.model_validate(record) for record in records]

    async def _prepare_on(self, node: Node, setup: Setup) -> str | None:
        """Prepare ``setup`` on ``node``; None, or what is wrong there (naming the node)."""
        if setup.key in node.prepared:
            return None
        try:
            node.prepared[setup.key] = await node.actor.prepare.remote(setup)
        except self._ray.exceptions.RayTaskError as exc:
            return f"{node.label}: {_cause(exc)}"
        except self._ray.exceptions.RayError as exc:
            await self._lose(node, f"{type(exc).__name__} while preparing the run")
        return None

    def _disagreement(self, key: str, nodes: Sequence[Node]) -> str | None:
        """Why ``nodes`` cannot play setup ``key`` with the nodes up: an image whose build differs."""
        reference = next((n for n in self.up if n not in nodes and key in n.prepared), None)
        pool = ([reference] if reference else []) + [n for n in nodes if key in n.prepared]
        for image in sorted({name for n in pool for name in n.prepared[key]}):
            builds = {n.prepared[key].get(image) for n in pool}
            if len(builds) > 1:
                listed = ", ".join(f"{n.label} has {str(n.prepared[key].get(image))[:19]}" for n in pool)
                return (
                    f"the nodes hold different builds of the image {image} ({listed}): copy one build to "
                    "every node (docs/SCALING.md, 'Images on the nodes')"
                )
        return None

    # -- playing -------------------------------------------------------------------------------------
    async def play(
        self,
        env: str,
        episodes: Iterable[Any],
        player: Player,
        *,
        options: dict[str, Any],
        retry: RetryPolicy,
        on_done: Callable[[Trajectory], None] | None = None,
        keep_going: Callable[[], bool] | None = None,
        execution: str = "session",
    ) -> list[Trajectory]:
        """Play ``episodes`` (runner ``Episode``s) on the nodes; return the trajectories in finish order.

        Each node plays as many at once as its slots; an attempt lost with its node is an env error,
        played again elsewhere under ``retry``. ``keep_going`` is asked before each episode starts."""
        todo = list(episodes)
        if not todo:
            return []
        entry = self._setup(env, options, player, [e.task for e in todo], execution)
        await self.prepare(env, options, player, [e.task for e in todo], execution)
        finished: list[Trajectory] = []

        async def one(episode: Any, first: Node) -> None:
            slot: list[Node] = [first]

            async def attempt() -> Trajectory:
                node = slot.pop() if slot else await self._take()
                return await self._play_on(node, entry, episode)

            traj = await play_with_retries(attempt, retry, episode.earlier)
            traj.epoch = episode.epoch
            finished.append(traj)
            if on_done is not None:
                on_done(traj)

        try:
            async with asyncio.TaskGroup() as group:
                for episode in todo:
                    node = await self._take()
                    if keep_going is not None and not keep_going():
                        await self._give(node)
                        break
                    group.create_task(one(episode, node))
        except BaseExceptionGroup as eg:
            raise _first(eg) from None
        finally:
            await self._release(entry)
        return finished

    async def _take(self) -> Node:
        """A free slot on a node that is up (waiting for one; an error once no node has been up for
        ``grace_s``)."""
        async with self._changed:
            while True:
                while self._free:
                    node = self._free.popleft()
                    if node.state == "up":
                        return node
                since = self._none_up_since
                starting = any(n.state == "starting" for n in self.nodes.values())
                if since is not None and not starting and time.monotonic() - since > self.grace_s:
                    lost = "; ".join(f"{n.label}: {n.note}" for n in self.nodes.values())
                    raise EngineUnavailable(
                        f"no Ray node offering {SLOTS} has been up for {self.grace_s:g} s ({lost}); the "
                        "finished episodes are recorded: resume the run once nodes are back"
                    )
                await self._changed.wait()

    async def _give(self, node: Node) -> None:
        if node.state == "up":
            async with self._changed:
                self._free.append(node)
                self._changed.notify()

    async def _play_on(self, node: Node, entry: _SetupEntry, episode: Any) -> Trajectory:
        """One attempt of ``episode`` on ``node``; an attempt lost with its node is an env error."""
        ray = self._ray
        started, clock = time.time(), time.perf_counter()
        ref = node.actor.play.remote(entry.setup.key, episode.task, episode.seed)
        try:
            data = await ref
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                ray.cancel(ref)
            raise
        except ray.exceptions.RayTaskError as exc:  # the player raised: a bad argument, never a fault
            await self._give(node)
            raise _cause(exc) from None
        except ray.exceptions.RayError as exc:
            why = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            if await self._answers(node):
                await self._give(node)
            else:
                await self._lose(node, why)
            return Trajectory(
                task_id=episode.task.id,
                env=episode.task.env,
                strategy=entry.strategy,
                model=entry.model,
                seed=episode.seed,
                reward_mode=entry.setup.options.get("reward", "intercode"),
                execution=entry.setup.execution,
                group=dict(episode.task.group),
                outcome="env_error",
                error=f"the episode was lost with {node.label}: {why}",
                node=node.id,
                engine=node.engine,
                started_at=started,
                duration_s=time.perf_counter() - clock,
            )
        node.episodes += 1
        await self._give(node)
        return Trajectory.model_validate(data)

    async def _answers(self, node: Node) -> bool:
        """Whether ``node``'s actor still answers (a failed call may be a passing hiccup)."""
        if node.state != "up":
            return False
        try:
            await _awaited(node.actor.info.remote(), 10)
        except (TimeoutError, self._ray.exceptions.RayError):
            return False
        return True

    async def _release(self, entry: _SetupEntry) -> None:
        """The setup's run is over: the nodes close its envs (and their warm containers)."""
        key = entry.setup.key
        self._setups = {k: v for k, v in self._setups.items() if v is not entry}
        calls = [n.actor.release.remote(key) for n in self.up if key in n.prepared]
        for node in self.nodes.values():
            node.prepared.pop(key, None)
        await asyncio.gather(*(_awaited(c, 60) for c in calls), return_exceptions=True)

    # -- the end --------------------------------------------------------------------------------------
    async def close(self) -> None:
        """Close every actor (their containers are removed), end them, sweep every node that answers
        of the run's containers, and disconnect if this run connected."""
        if self._ray is None:
            return
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        closing = [n for n in self.nodes.values() if n.state == "up"]
        infos = await asyncio.gather(
            *(_awaited(n.actor.close.remote(), 60) for n in closing), return_exceptions=True
        )
        for node, info in zip(closing, infos, strict=True):
            if isinstance(info, dict):
                node.cpu_s = info["cpu_s"]
        for node in self.nodes.values():
            self._kill(node)
        await self._sweep()
        if self._connected_here:
            self._ray.shutdown()
            self._connected_here = False
        self._ray = None

    async def _sweep(self) -> None:
        """Remove the run's containers on every live node offering slots (lost nodes are not asked:
        their engines are out of reach until they come back, under a new node ID)."""
        from intercode_agents.runner.ray.cleanup import sweep_run

        lost = {n.id for n in self.nodes.values() if n.state == "lost"}
        targets = [node for node in _slot_nodes(self._ray) if node not in lost]
        refs = [_on_node(self._ray, sweep_run, node).remote(self.run_id) for node in targets]
        waits = (_awaited(ref, 60) for ref in refs)
        results = await asyncio.gather(*waits, return_exceptions=True)
        for node, result in zip(targets, results, strict=True):
            self.swept[node] = result if isinstance(result, dict) else {"error": str(result)}


def _first(eg: BaseExceptionGroup) -> BaseException:
    """The error to show: a project error (a bad argument) first, else the first."""
    leaves: list[BaseException] = []

    def walk(exc: BaseException) -> None:
        if isinstance(exc, BaseExceptionGroup):
            for inner in exc.exceptions:
                walk(inner)
        else:
            leaves.append(exc)

    walk(eg)
    return next((e for e in leaves if isinstance(e, IntercodeError)), leaves[0])


_shared: dict[tuple[int, str], tuple[RayRun, list[int]]] = {}


@contextlib.asynccontextmanager
async def open_ray(
    address: str = "", *, console: Console | None = None, **options: Any
) -> AsyncIterator[RayRun]:
    """The run's :class:`RayRun` on ``address``, shared by the runs of one event loop (several models
    side by side take turns on the same actors and slots) and closed when the last one is done."""
    key = (id(asyncio.get_running_loop()), address or os.environ.get(ADDRESS_ENV) or "auto")
    if key in _shared:
        run, users = _shared[key]
        users[0] += 1
    else:
        run, users = RayRun(address, console=console, **options), [1]
        _shared[key] = (run, users)
        try:
            await run.__aenter__()
        except BaseException:
            del _shared[key]
            raise
    try:
        yield run
    finally:
        users[0] -= 1
        if users[0] == 0:
            del _shared[key]
            await asyncio.shield(run.close())

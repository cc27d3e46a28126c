"""Several engines behind one harness on one host: where the next sandbox goes, and which engine is down.

An :class:`EngineSet` holds one or more backends (``--engines URL[,URL...]``, ``$INTERCODE_ENGINES``,
``make_env(..., backend=EngineSet(...))``): a Docker engine and a Podman service on one machine, say,
or two dockerds with their own storage. Beyond one machine a run goes on a Ray cluster, whose nodes
each drive their own engines (:mod:`intercode_agents.runner.ray`); placement across machines is
Ray's, so this module keeps only what several engines on one host need. Each new episode's sandboxes
are placed on the engine with the most free slots:

- **Slots.** Each engine has ``slots`` (``?slots=N`` in an engine string, the ``slots`` field of its
  config): the sandboxes it should hold at once. Free slots are its slots less the sandboxes this
  process has alive on it. (No back-off on latency: engines on one host share its CPUs and slow down
  together, so a latency measured on one says nothing of the others.)
- **Down engines.** An engine that stopped answering (a refused connection, a call past its
  deadline) is left out for 5 s, doubling to a minute, and tried again after; if every engine is
  down the one that failed longest ago is tried, so errors come fast rather than hang.

Placement never waits: with every engine full, the least loaded still gets the sandbox (a pool that
waited could deadlock an episode that needs a second sandbox). An episode that fails because its
engine died is an env error, which the runner retries (``runner/retries.py``); the retry is placed on
the engines that still answer.

**Placement is the harness's, not the backend's.** A backend only does what the contract
(:mod:`intercode_agents.sandbox.contract`) asks. The set sees each engine through a :class:`Metered`
view: a :class:`Backend` that hands every contract call to the engine's backend and, on the way,
counts the sandboxes created and removed, and marks the engine down when a call finds it
unreachable. So any backend, a third party's included, gets placement without writing
a line for it. There is one view per backend in a process (:func:`metered`), and
:func:`resolve_engines` gives the same set for the same engines, so every env of a run, and every
set that shares an engine, reads the same counts.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from intercode_agents.errors import ConfigError, EngineTimeout, EngineUnavailable
from intercode_agents.sandbox.backends import config_of, resolve_backend
from intercode_agents.sandbox.contract import (
    Backend,
    Change,
    Channel,
    CreateRequest,
    ImageInfo,
    Leftover,
    Started,
)

T = TypeVar("T")
ENGINES_ENV = "INTERCODE_ENGINES"
DEFAULT_SLOTS = 16


class Metered(Backend):
    """``engine`` as placement sees it: every contract call goes to ``engine``; on the way this view
    keeps the engine's health (see the module docstring). What is not in the contract (Docker's
    ``inspect``, say) is the engine's own, reached through this view unchanged."""

    def __init__(self, engine: Backend, slots: int = DEFAULT_SLOTS) -> None:
        super().__init__(engine.name)
        self.engine = engine
        self.type = engine.type
        self.fast_paths = engine.fast_paths
        self.docker_changes = engine.docker_changes
        self.slots = slots
        self.live = 0  # sandboxes created and not yet removed
        self.down_until = 0.0  # monotonic time before which placement avoids this engine
        self.failures = 0

    def __repr__(self) -> str:
        return repr(self.engine)

    def __getattr__(self, name: str) -> Any:
        if name == "engine":  # (not set yet: never look it up on itself)
            raise AttributeError(name)
        return getattr(self.engine, name)

    # -- health ---------------------------------------------------------------------------------
    def note_down(self) -> None:
        """The engine did not answer: avoid it for a while (5 s, doubling to a minute)."""
        self.failures += 1
        self.down_until = time.monotonic() + min(5.0 * 2 ** (self.failures - 1), 60.0)

    def note_up(self) -> None:
        self.failures = 0
        self.down_until = 0.0

    @property
    def down(self) -> bool:
        return time.monotonic() < self.down_until

    async def _watch(self, call: Awaitable[T]) -> T:
        """Await one engine call: an unreachable engine is marked down, one that answers up again."""
        try:
            result = await call
        except (EngineUnavailable, EngineTimeout):
            self.note_down()
            raise
        if self.failures:
            self.note_up()
        return result

    # -- the contract, handed on --------------------------------------------------------------
    async def ping(self) -> str:
        return await self._watch(self.engine.ping())

    async def image(self, ref: str) -> ImageInfo | None:
        return await self._watch(self.engine.image(ref))

    async def create(self, request: CreateRequest) -> str:
        sandbox_id = await self._watch(self.engine.create(request))
        self.live += 1
        return sandbox_id

    async def attach(self, sandbox_id: str) -> Channel:
        return await self._watch(self.engine.attach(sandbox_id))

    async def start(self, sandbox_id: str, *, fast_paths: bool) -> Started:
        return await self._watch(self.engine.start(sandbox_id, fast_paths=fast_paths))

    async def remove(self, sandbox_id: str) -> None:
        await self._watch(self.engine.remove(sandbox_id))
        self.live = max(0, self.live - 1)

    async def exec(
        self,
        sandbox_id: str,
        argv: Sequence[str],
        *,
        user: str | None = None,
        workdir: str | None = None,
        env: Mapping[str, str] | None = None,
        stdin: bool = True,
    ) -> Channel:
        call = self.engine.exec(sandbox_id, argv, user=user, workdir=workdir, env=env, stdin=stdin)
        return await self._watch(call)

    async def put_archive(self, sandbox_id: str, path: str, tar_bytes: bytes) -> None:
        await self._watch(self.engine.put_archive(sandbox_id, path, tar_bytes))

    async def get_archive(self, sandbox_id: str, path: str) -> bytes:
        return await self._watch(self.engine.get_archive(sandbox_id, path))

    async def changes(self, sandbox_id: str) -> list[Change]:
        return await self._watch(self.engine.changes(sandbox_id))

    async def processes(self, sandbox_id: str) -> frozenset[int]:
        return await self._watch(self.engine.processes(sandbox_id))

    async def running(self, sandbox_id: str) -> bool:
        return await self._watch(self.engine.running(sandbox_id))

    async def disk_usage(self, sandbox_id: str) -> int:
        return await self._watch(self.engine.disk_usage(sandbox_id))

    async def leftovers(self, labels: Mapping[str, str]) -> list[Leftover]:
        return await self._watch(self.engine.leftovers(labels))

    def remove_now(self, sandbox_ids: Iterable[str], labels: Mapping[str, str] | None = None) -> int:
        return self.engine.remove_now(sandbox_ids, labels)

    def leftovers_now(self, labels: Mapping[str, str]) -> list[Leftover]:
        return self.engine.leftovers_now(labels)

    def image_store(self) -> Any:
        return self.engine.image_store()

    async def close(self) -> None:
        await self.engine.close()


_meters: dict[Backend, Metered] = {}


def metered(backend: Backend) -> Metered:
    """The process's one placement view of ``backend``, with the slots of the config it was made
    from (:data:`DEFAULT_SLOTS` for a backend made by hand)."""
    if isinstance(backend, Metered):
        return backend
    if backend not in _meters:
        config = config_of(backend)
        _meters[backend] = Metered(backend, config.slots if config is not None else DEFAULT_SLOTS)
    return _meters[backend]


def free(engine: Metered) -> int:
    return engine.slots - engine.live


class EngineSet:
    """Several engines; :meth:`choose` names the one for the next sandbox. ``backends`` are the
    engines' placement views (:class:`Metered`), whatever backends the set was given."""

    def __init__(self, backends: Sequence[Backend]) -> None:
        if not backends:
            raise ConfigError("an engine set needs at least one engine")
        names = [b.name for b in backends]
        if len(set(names)) != len(names):
            raise ConfigError(f"an engine is named twice: {', '.join(names)}")
        self.backends = [metered(b) for b in backends]
        self._turn = itertools.count()

    def __repr__(self) -> str:
        return f"EngineSet({', '.join(b.name for b in self.backends)})"

    def __len__(self) -> int:
        return len(self.backends)

    @property
    def first(self) -> Metered:
        return self.backends[0]

    def choose(self) -> Metered:
        """The engine with the most free slots among those that answer (ties take turns)."""
        up = [b for b in self.backends if not b.down]
        if not up:
            return min(self.backends, key=lambda b: b.down_until)
        best = max(free(b) for b in up)
        tied = [b for b in up if free(b) == best]
        return tied[next(self._turn) % len(tied)]

    def describe(self) -> list[dict[str, Any]]:
        """Each engine's slots, live sandboxes and state (for run summaries)."""
        return [{"engine": b.name, "slots": b.slots, "live": b.live, "down": b.down} for b in self.backends]


_sets: dict[tuple[Backend, ...], EngineSet] = {}


def resolve_engines(
    value: EngineSet | Backend | Iterable[Any] | Mapping[str, Any] | str | None = None,
) -> EngineSet:
    """An :class:`EngineSet` from ``--engines`` text (comma-separated engine strings), a list of
    backends or configs, one backend, or None (``$INTERCODE_ENGINES``, else the default backend).
    The same engines give the same set in a process."""
    if isinstance(value, EngineSet):
        return value
    if value is None:
        value = os.environ.get(ENGINES_ENV) or None
    if value is None or isinstance(value, Backend | Mapping):
        items: list[Any] = [value]
    elif isinstance(value, str):
        text = value.strip()
        items = [text] if text.startswith("{") else [p for p in text.split(",") if p.strip()]
    else:
        items = list(value)
    backends = tuple(metered(resolve_backend(item)) for item in items)
    if backends not in _sets:
        _sets[backends] = EngineSet(backends)
    return _sets[backends]

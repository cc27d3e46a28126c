"""Many engines at once: where the next sandbox goes.

An :class:`EngineSet` holds one or more backends (``--engines URL[,URL...]``, ``$INTERCODE_ENGINES``,
``make_env(..., backend=EngineSet(...))``). Each new episode's sandboxes are placed on the engine with
the most free capacity:

- **Slots.** Each backend has ``slots`` (``?slots=N`` in an engine string): the sandboxes it should
  hold at once. Free capacity is its slots less the sandboxes this process has alive on it.
- **Back-off on latency.** Every create and exec call's latency feeds an average per engine; the
  lowest average seen is its baseline. When the average climbs past twice the baseline (the engine,
  or its host, is saturated), the engine's slots shrink in proportion, down to a quarter, and grow
  back as it recovers. So a slow engine gets fewer new sandboxes while the others take the load.
- **Down engines.** An engine that stopped answering (a refused connection, a call past its
  deadline) is left out for 5 s, doubling to a minute, and tried again after; if every engine is
  down the one that failed longest ago is tried, so errors come fast rather than hang.

Placement never waits: with every engine full, the least loaded still gets the sandbox (a pool that
waited could deadlock an episode that needs a second sandbox). An episode that fails because its
engine died is an env error, which the runner retries (``runner/retries.py``); the retry is placed on
the engines that still answer.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from intercode_agents.errors import ConfigError
from intercode_agents.sandbox.contract import Backend

ENGINES_ENV = "INTERCODE_ENGINES"
SLOW_FACTOR = 2.0  # latency past this many baselines shrinks the engine's slots
MIN_SHARE = 0.25  # the least share of its slots a slow engine keeps


def capacity(backend: Backend) -> float:
    """``backend``'s slots, shrunk while its latency is past :data:`SLOW_FACTOR` baselines."""
    if backend.latency is None or not backend.baseline or backend.latency <= SLOW_FACTOR * backend.baseline:
        return float(backend.slots)
    return backend.slots * max(MIN_SHARE, SLOW_FACTOR * backend.baseline / backend.latency)


def free(backend: Backend) -> float:
    return capacity(backend) - backend.live


class EngineSet:
    """Several engines; :meth:`choose` names the one for the next sandbox."""

    def __init__(self, backends: Sequence[Backend]) -> None:
        if not backends:
            raise ConfigError("an engine set needs at least one engine")
        names = [b.name for b in backends]
        if len(set(names)) != len(names):
            raise ConfigError(f"an engine is named twice: {', '.join(names)}")
        self.backends = list(backends)
        self._turn = itertools.count()

    def __repr__(self) -> str:
        return f"EngineSet({', '.join(b.name for b in self.backends)})"

    def __len__(self) -> int:
        return len(self.backends)

    @property
    def first(self) -> Backend:
        return self.backends[0]

    def choose(self) -> Backend:
        """The engine with the most free capacity among those that answer (ties take turns)."""
        up = [b for b in self.backends if not b.down]
        if not up:
            return min(self.backends, key=lambda b: b.down_until)
        best = max(free(b) for b in up)
        tied = [b for b in up if free(b) >= best - 1e-9]
        return tied[next(self._turn) % len(tied)]

    def describe(self) -> list[dict[str, Any]]:
        """Each engine's slots, live sandboxes, capacity now, latency and state (for run summaries)."""
        return [
            {
                "engine": b.name,
                "slots": b.slots,
                "live": b.live,
                "capacity": round(capacity(b), 2),
                "latency_ms": None if b.latency is None else round(b.latency * 1000, 1),
                "down": b.down,
            }
            for b in self.backends
        ]


def resolve_engines(
    value: EngineSet | Backend | Iterable[Any] | Mapping[str, Any] | str | None = None,
) -> EngineSet:
    """An :class:`EngineSet` from ``--engines`` text (comma-separated engine strings), a list of
    backends or configs, one backend, or None (``$INTERCODE_ENGINES``, else the default backend)."""
    from intercode_agents.sandbox.backends import resolve_backend

    if isinstance(value, EngineSet):
        return value
    if value is None:
        value = os.environ.get(ENGINES_ENV) or None
        if value is None:
            return EngineSet([resolve_backend(None)])
    if isinstance(value, Backend | Mapping):
        return EngineSet([resolve_backend(value)])
    if isinstance(value, str):
        text = value.strip()
        items: list[Any] = [text] if text.startswith("{") else [p for p in text.split(",") if p.strip()]
    else:
        items = list(value)
    return EngineSet([resolve_backend(item) for item in items])

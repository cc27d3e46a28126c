"""How many sandbox starts and removals an engine runs at once, and in what order.

A container start costs the engine's host tens of milliseconds of CPU (dockerd, containerd, a shim,
runc), so past a few at once more starts only make each one slower: 24 pools refilling together on a
2-core machine took a second each, and an episode that needed a sandbox waited behind all of them.
So each engine has a gate: at most ``slots`` starts and removals run at once, and when a slot frees,
the most urgent request waiting gets it: a start an episode is waiting for (:data:`URGENT`), then a
pool's refill (:data:`REFILL`), then a removal (:data:`REMOVAL`: the sandbox's processes are already
killed when its removal waits, so it holds disk, not CPU or memory). A request's priority is asked
again whenever a slot frees, so a refill becomes urgent the moment an episode starts waiting for it.

A task that holds a slot may remove a sandbox without taking a second one (a start that fails removes
what it made), so the gate can never deadlock on itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import itertools
import os
import weakref
from collections.abc import AsyncIterator, Callable
from typing import Any

URGENT, REFILL, REMOVAL = 0, 1, 2
#: Starts and removals one engine runs at once: about two per core of the machine when the engine
#: runs here (a remote engine's host is not known: the same figure).
DEFAULT_SLOTS = max(2, 2 * (os.cpu_count() or 1))

_holding: contextvars.ContextVar[bool] = contextvars.ContextVar("holding_engine_slot", default=False)


class EngineGate:
    """The slots of one engine (see the module docstring)."""

    def __init__(self, slots: int = DEFAULT_SLOTS) -> None:
        self.slots = slots
        self.busy = 0
        self._pending: list[tuple[Callable[[], int], int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    @property
    def waiting(self) -> int:
        return len(self._pending)

    @contextlib.asynccontextmanager
    async def slot(self, priority: int | Callable[[], int]) -> AsyncIterator[None]:
        """Hold one slot for the block. ``priority`` (lower goes first) may be a callable, asked
        each time a slot frees. Within a held slot this is a no-op."""
        if _holding.get():
            yield
            return
        rank = priority if callable(priority) else (lambda: priority)
        if self.busy < self.slots and not self._pending:
            self.busy += 1
        else:
            granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            request = (rank, next(self._order), granted)
            self._pending.append(request)
            try:
                await granted
            except BaseException:
                if request in self._pending:
                    self._pending.remove(request)
                elif granted.done() and not granted.cancelled():
                    self._free()  # the slot came just as the waiter was cancelled: hand it on
                raise
        token = _holding.set(True)
        try:
            yield
        finally:
            _holding.reset(token)
            self._free()

    def _free(self) -> None:
        self.busy -= 1
        while self.busy < self.slots and self._pending:
            request = min(self._pending, key=lambda r: (r[0](), r[1]))
            self._pending.remove(request)
            if not request[2].done():
                request[2].set_result(None)
                self.busy += 1


_gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[Any, EngineGate]] = (
    weakref.WeakKeyDictionary()
)


def gate_of(engine: Any) -> EngineGate:
    """The running loop's gate of ``engine`` (a backend, its placement view, or an engine set)."""
    key = getattr(engine, "engine", engine)  # a placement view and its backend share one gate
    gates = _gates.setdefault(asyncio.get_running_loop(), {})
    if key not in gates:
        gates[key] = EngineGate()
    return gates[key]

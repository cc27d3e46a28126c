"""A warm pool of sandboxes that refills in the background.

``size`` bounds the sandboxes the pool holds, ready or in use. How many it keeps ready depends on
the pool's kind:

- a fixed pool (the default) keeps ``size``, ready or in use;
- an ``adaptive`` pool (the envs' shared pools) keeps ready what its measured demand needs: the
  sandboxes taken per second over its last seconds of activity times the time a start takes now,
  and a spare, and at least as many as were taken at once (a run's workers), within ``size``
  (:class:`Demand`). An idle pool keeps what its last run needed: the next run finds it ready. A
  replay of 24 tasks on 8 workers used to make 24 spares up front, a flood of concurrent starts
  whose first ones the episodes waited for, and most of which were removed unused at the end.

When none is ready, ``acquire`` waits for the first one being made, and starts one itself if none is
under way for it (so borrowing a second sandbox never deadlocks); one that comes back while the pool
holds ``size`` others is removed. Starts and removals go through the engine's gate
(:mod:`.engine_gate`): a start an episode waits for goes first, refills next, removals last.

Two kinds of lease (see :mod:`intercode_agents.sandbox.pristine` for why):

- ``acquire()`` is for untrusted code (an agent's episode). It always gets a sandbox nobody has
  used, and that sandbox is removed when it comes back, whatever was done in it.
- ``acquire(trusted=True)`` is for the harness's own commands (a gold solution, a probe). It may get
  a sandbox that only such commands used before and that came back with a :class:`Fingerprint`
  equal, on every channel, to the one it had when fresh. Verification runs in the background, so
  ``release`` returns at once; a sandbox that fails it is removed and replaced.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections import deque
from collections.abc import AsyncIterator, Coroutine
from typing import Any

from intercode_agents.sandbox.backends import resolve_backend
from intercode_agents.sandbox.engine_gate import REFILL, URGENT, gate_of
from intercode_agents.sandbox.pristine import Fingerprint
from intercode_agents.sandbox.sandbox import Sandbox


class Demand:
    """How fast a pool's fresh sandboxes are taken, how many at once, and how long one takes to start.

    Takes are kept for the last ``WINDOW_S`` seconds *of activity* (up to the latest take, not up to
    now): an idle pool keeps ready what its last run needed, so that the next run on the same warm
    pools finds it so; it does not decay while nobody takes."""

    WINDOW_S = 10.0  # takes this much older than the latest are forgotten
    HEADROOM = 1.5  # ready spares for this many start times of demand

    def __init__(self) -> None:
        self._takes: deque[tuple[float, int]] = deque()  # (when, leases out or waiting then)
        self.start_s: float | None = None  # an average of recent start times

    def took(self, out: int = 1) -> None:
        """A fresh sandbox was taken, with ``out`` leases out or waiting, this one included."""
        now = time.monotonic()
        self._takes.append((now, out))
        while self._takes[0][0] < now - self.WINDOW_S:
            self._takes.popleft()

    def started(self, seconds: float) -> None:
        self.start_s = seconds if self.start_s is None else 0.7 * self.start_s + 0.3 * seconds

    @property
    def rate(self) -> float:
        """Fresh sandboxes taken per second over the window (a burst counts over one second)."""
        if not self._takes:
            return 0.0
        return len(self._takes) / max(self._takes[-1][0] - self._takes[0][0], 1.0)

    @property
    def burst(self) -> int:
        """The most leases out or waiting at once over the window: a run's workers, which all take a
        sandbox again at the start of their next episodes (or of the next run)."""
        return max((out for _, out in self._takes), default=0)

    def ready_target(self) -> int:
        """Sandboxes to keep ready: the demand of one start time, with headroom, and a spare; and at
        least as many as were out at once, so that every worker of a run finds one ready."""
        return max(self.burst, 1 + math.ceil(self.rate * (self.start_s or 0.5) * self.HEADROOM))


class SandboxPool:
    def __init__(
        self,
        image: str,
        size: int = 2,
        *,
        reuse: bool = True,
        adaptive: bool = False,
        backend: Any = None,
        **sandbox_options: Any,
    ) -> None:
        """``backend``: the engine of every sandbox of the pool (see :class:`Sandbox`); an engine set
        places each one as it is made. ``adaptive``: keep ready what the demand needs (see the module
        docstring). ``sandbox_options`` are :class:`Sandbox`'s keywords."""
        if size < 0:
            raise ValueError("a pool's size cannot be negative")
        self.image = image
        self.size = size
        self.reuse = reuse  # False: trusted leases are removed on return as well
        self.adaptive = adaptive
        self.backend = backend
        self._engine = backend if backend is not None else resolve_backend(None)
        self._options = sandbox_options
        self._fresh: list[Sandbox] = []  # never lent
        self._recycled: list[Sandbox] = []  # lent to trusted code only, and verified since
        self._filling = 0  # starts under way or waiting for the engine's gate
        self._starting = 0  # of those, starts past the gate
        self._waiters: deque[tuple[asyncio.Future[Sandbox], bool]] = deque()  # acquires with none ready
        self._reference: dict[Sandbox, Fingerprint] = {}  # taken at a sandbox's first trusted lease
        self._out: dict[Sandbox, bool] = {}  # in use -> trusted lease
        self._recycling: set[Sandbox] = set()  # released, being verified or removed
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False
        self.demand = Demand()
        self.stats = {"created": 0, "reused": 0, "surplus": 0, "replaced": 0, "cold_acquires": 0}

    async def __aenter__(self) -> SandboxPool:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        """Create the first sandbox now (so a missing image or a dead engine surfaces here)."""
        if self.size:
            self._fresh.append(await self._new())
        self._top_up()

    def grow(self, extra: int) -> None:
        """Keep ``extra`` more sandboxes."""
        self.size += extra
        self._top_up()

    def shrink(self, fewer: int) -> None:
        """Keep ``fewer`` sandboxes less. Ready ones stay until taken; ones that come back beyond the
        new size are removed."""
        self.size = max(0, self.size - fewer)

    @property
    def ready(self) -> int:
        """Sandboxes ready to hand out now (fresh or recycled)."""
        return len(self._fresh) + len(self._recycled)

    def _held(self) -> int:
        """The sandboxes that count against ``size``: fresh, in use, being verified or being made.
        Recycled ones (for trusted leases only) are kept besides, up to ``size`` of them, so that
        they never take the place of the fresh sandboxes untrusted code needs."""
        return len(self._fresh) + len(self._out) + len(self._recycling) + self._filling

    def _short(self) -> bool:
        """Whether the pool should start one more sandbox now."""
        if self._filling < len(self._waiters):
            return True  # every acquire that waits has a start under way for it
        if self._held() >= self.size:
            return False
        if not self.adaptive:
            return True
        spare = len(self._fresh) + self._filling - len(self._waiters)
        return spare < self.demand.ready_target()

    def _top_up(self) -> None:
        while not self._closed and self._short():
            self._filling += 1
            self._background(self._fill())

    def _background(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _priority(self) -> int:
        """A start is urgent while an acquire waits that no start past the gate will serve."""
        return URGENT if len(self._waiters) > self._starting else REFILL

    async def _fill(self) -> None:
        started = False
        try:
            async with gate_of(self._engine).slot(self._priority):
                started = True
                self._starting += 1
                sb = await self._new()
        except BaseException as exc:
            self._filling -= 1
            self._starting -= started
            self._fail_waiter(exc)  # the error goes to an acquire that waits, if any
            if isinstance(exc, asyncio.CancelledError):
                raise
            return
        self._filling -= 1
        self._starting -= 1
        await self._deliver(sb)

    def _fail_waiter(self, exc: BaseException) -> None:
        while self._waiters:
            waiter, _ = self._waiters.popleft()
            if not waiter.done():
                if isinstance(exc, asyncio.CancelledError):
                    waiter.cancel()
                else:
                    waiter.set_exception(exc)
                return

    async def _deliver(self, sb: Sandbox) -> None:
        """A new sandbox: to the first acquire that waits, else ready (or removed, past ``size``)."""
        while self._waiters:
            waiter, trusted = self._waiters.popleft()
            if not waiter.done():
                self._out[sb] = trusted
                waiter.set_result(sb)
                return
        if self._closed or self._held() >= self.size:
            await sb.close()
            return
        self._fresh.append(sb)

    async def _new(self) -> Sandbox:
        sb = Sandbox(self.image, backend=self.backend, **self._options)
        began = time.monotonic()
        await sb.start()
        self.demand.started(time.monotonic() - began)
        self.stats["created"] += 1
        return sb

    async def acquire(self, *, trusted: bool = False) -> Sandbox:
        """A pristine sandbox: for untrusted code, one nobody used; for the harness's own commands
        (``trusted``), a verified recycled one when ready, else a fresh one."""
        if self._closed:
            raise RuntimeError("the pool is closed")
        if trusted and self._recycled:
            sb = self._recycled.pop()
            self._out[sb] = trusted
        elif self._fresh:
            sb = self._fresh.pop()
            self._out[sb] = trusted
            self.demand.took(len(self._out) + len(self._waiters))
        else:
            self.demand.took(len(self._out) + len(self._waiters) + 1)
            sb = await self._wait_for_one(trusted)
        sb.untrusted = sb.untrusted or not trusted
        try:
            if trusted and self.reuse and sb not in self._reference:
                self._reference[sb] = await sb.forensics.fingerprint()  # it is fresh: this is its reference
        except BaseException:
            self._out.pop(sb, None)
            await sb.close()
            raise
        self._top_up()
        return sb

    async def _wait_for_one(self, trusted: bool) -> Sandbox:
        """The first sandbox made for this acquire (a start is under way for every waiting one)."""
        self.stats["cold_acquires"] += 1
        waiter: asyncio.Future[Sandbox] = asyncio.get_running_loop().create_future()
        self._waiters.append((waiter, trusted))
        self._top_up()
        try:
            return await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                sb = waiter.result()  # handed over as this acquire was cancelled: still fresh
                self._out.pop(sb, None)
                await self._deliver(sb)
            else:
                self._waiters = deque(w for w in self._waiters if w[0] is not waiter)
            raise

    async def release(self, sb: Sandbox, *, dirty: bool = False) -> None:
        """Give ``sb`` back. An untrusted lease is removed; a trusted one is verified in the
        background and kept for trusted leases only if it matches its fresh fingerprint."""
        trusted = self._out.pop(sb, False)
        if self._closed:
            await sb.close()
            return
        self._recycling.add(sb)
        self._background(self._recycle(sb, trusted and self.reuse and not dirty))

    async def _recycle(self, sb: Sandbox, verify: bool) -> None:
        try:
            if verify:
                await sb.close_sessions()
                if await self._matches(sb):
                    self._recycling.discard(sb)
                    if not self._closed and len(self._recycled) < self.size:
                        self._recycled.append(sb)
                        self.stats["reused"] += 1
                        if self.adaptive:  # it no longer counts against size: room for a fresh one
                            self._top_up()
                        return
                    self.stats["surplus"] += 1
                    self._reference.pop(sb, None)
                    await sb.close()
                    return
            self._reference.pop(sb, None)
            self.stats["replaced"] += 1
            self._recycling.discard(sb)
            self._top_up()  # the replacement starts while the old container is removed
            await sb.close()
        except BaseException:
            self._recycling.discard(sb)
            self._reference.pop(sb, None)
            await sb.close()
            raise

    async def _matches(self, sb: Sandbox) -> bool:
        reference = self._reference.get(sb)
        if reference is None:
            return False
        try:
            return await sb.forensics.matches(reference)
        except Exception:
            return False

    async def drain(self) -> None:
        """Wait until every release has been verified and refills are done (tests, benchmarks)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    @contextlib.asynccontextmanager
    async def sandbox(self, *, trusted: bool = False) -> AsyncIterator[Sandbox]:
        sb = await self.acquire(trusted=trusted)
        dirty = True
        try:
            yield sb
            dirty = False
        finally:
            await self.release(sb, dirty=dirty)

    async def close(self) -> None:
        self._closed = True
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for waiter, _ in self._waiters:
            waiter.cancel()
        self._waiters.clear()
        victims = [*self._out, *self._recycling, *self._fresh, *self._recycled]
        self._out.clear()
        self._recycling.clear()
        self._fresh.clear()
        self._recycled.clear()
        self._reference.clear()
        await asyncio.gather(*(sb.close() for sb in victims), return_exceptions=True)

"""A warm pool of pristine sandboxes that refills in the background.

``size`` is how many sandboxes the pool keeps, ready or in use, not a cap: when none is ready,
``acquire`` starts a fresh one at once rather than wait (so borrowing a second sandbox never
deadlocks), and one that comes back while the pool holds ``size`` others is removed. The pool
refills itself in the background whenever it holds fewer.

A released sandbox is reused only when it is verified pristine (:meth:`Sandbox.is_pristine`: the
same processes and the same file system as when it was fresh). Otherwise it is removed and a fresh
one takes its place. Verification runs in the background, so ``release`` returns at once.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Coroutine
from typing import Any

from intercode_agents.sandbox.sandbox import FreshState, Sandbox


class SandboxPool:
    def __init__(self, image: str, size: int = 2, *, reuse: bool = True, **sandbox_options: Any) -> None:
        if size < 0:
            raise ValueError("a pool's size cannot be negative")
        self.image = image
        self.size = size
        self.reuse = reuse
        self._options = sandbox_options
        self._ready: list[Sandbox] = []
        self._filling = 0
        self._baseline: dict[Sandbox, FreshState] = {}
        self._out: set[Sandbox] = set()
        self._recycling: set[Sandbox] = set()  # released, being verified
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False
        self.stats = {"created": 0, "reused": 0, "surplus": 0, "replaced": 0, "cold_acquires": 0}

    async def __aenter__(self) -> SandboxPool:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        """Create the first sandbox now (so a missing image or a dead engine surfaces here)."""
        if self.size:
            self._ready.append(await self._fresh())
        self._top_up()

    def grow(self, extra: int) -> None:
        """Keep ``extra`` more sandboxes."""
        self.size += extra
        self._top_up()

    def shrink(self, fewer: int) -> None:
        """Keep ``fewer`` sandboxes less. Ready ones stay until taken; ones that come back beyond the
        new size are removed."""
        self.size = max(0, self.size - fewer)

    def _held(self) -> int:
        """Sandboxes the pool counts as its own: ready, in use, being verified or being made."""
        return len(self._ready) + len(self._out) + len(self._recycling) + self._filling

    def _top_up(self) -> None:
        while not self._closed and self._held() < self.size:
            self._filling += 1
            self._background(self._fill())

    def _background(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _fill(self) -> None:
        try:
            sb = await self._fresh()
        except Exception:  # the next acquire() starts one itself and raises the real error
            return
        finally:
            self._filling -= 1
        await self._offer(sb)

    async def _offer(self, sb: Sandbox) -> bool:
        """Keep ``sb`` ready, unless the pool is full (then it is removed); True when kept."""
        if self._closed or self._held() >= self.size:
            self._baseline.pop(sb, None)
            await sb.close()
            return False
        self._ready.append(sb)
        return True

    async def _fresh(self) -> Sandbox:
        sb = Sandbox(self.image, **self._options)
        await sb.start()
        self.stats["created"] += 1
        try:
            if self.reuse:
                self._baseline[sb] = await sb.fresh_state()
        except BaseException:
            await sb.close()
            raise
        return sb

    async def acquire(self) -> Sandbox:
        """A pristine sandbox: a warm one if ready, else a fresh one started now."""
        if self._closed:
            raise RuntimeError("the pool is closed")
        if self._ready:
            sb = self._ready.pop()
        else:
            self.stats["cold_acquires"] += 1
            sb = await self._fresh()
        self._out.add(sb)
        self._top_up()
        return sb

    async def release(self, sb: Sandbox, *, dirty: bool = False) -> None:
        """Give ``sb`` back. It is verified in the background and reused only if pristine."""
        self._out.discard(sb)
        if self._closed:
            await sb.close()
            return
        self._recycling.add(sb)
        self._background(self._recycle(sb, dirty))

    async def _recycle(self, sb: Sandbox, dirty: bool) -> None:
        try:
            if self.reuse and not dirty:
                await sb.close_sessions()
                if await self.is_pristine(sb):
                    self._recycling.discard(sb)
                    self.stats["reused" if await self._offer(sb) else "surplus"] += 1
                    return
            self._baseline.pop(sb, None)
            self.stats["replaced"] += 1
            self._recycling.discard(sb)
            self._top_up()  # the replacement starts while the old container is removed
            await sb.close()
        except BaseException:
            self._recycling.discard(sb)
            await sb.close()
            raise

    async def is_pristine(self, sb: Sandbox) -> bool:
        fresh = self._baseline.get(sb)
        if fresh is None:
            return False
        try:
            return await sb.is_pristine(fresh)
        except Exception:
            return False

    async def drain(self) -> None:
        """Wait until every release has been verified and refills are done (tests, benchmarks)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    @contextlib.asynccontextmanager
    async def sandbox(self) -> AsyncIterator[Sandbox]:
        sb = await self.acquire()
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
        victims = [*self._out, *self._recycling, *self._ready]
        self._out.clear()
        self._recycling.clear()
        self._ready.clear()
        await asyncio.gather(*(sb.close() for sb in victims), return_exceptions=True)

"""A warm pool of sandboxes that refills in the background.

``size`` is how many sandboxes the pool keeps, ready or in use, not a cap: when none is ready,
``acquire`` starts a fresh one at once rather than wait (so borrowing a second sandbox never
deadlocks), and one that comes back while the pool holds ``size`` others is removed. The pool
refills itself in the background whenever it holds fewer.

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
from collections.abc import AsyncIterator, Coroutine
from typing import Any

from intercode_agents.sandbox.pristine import Fingerprint
from intercode_agents.sandbox.sandbox import Sandbox


class SandboxPool:
    def __init__(
        self, image: str, size: int = 2, *, reuse: bool = True, backend: Any = None, **sandbox_options: Any
    ) -> None:
        """``backend``: the engine of every sandbox of the pool (see :class:`Sandbox`); an engine set
        places each one as it is made. ``sandbox_options`` are :class:`Sandbox`'s keywords."""
        if size < 0:
            raise ValueError("a pool's size cannot be negative")
        self.image = image
        self.size = size
        self.reuse = reuse  # False: trusted leases are removed on return as well
        self.backend = backend
        self._options = sandbox_options
        self._fresh: list[Sandbox] = []  # never lent
        self._recycled: list[Sandbox] = []  # lent to trusted code only, and verified since
        self._filling = 0
        self._reference: dict[Sandbox, Fingerprint] = {}  # taken at a sandbox's first trusted lease
        self._out: dict[Sandbox, bool] = {}  # in use -> trusted lease
        self._recycling: set[Sandbox] = set()  # released, being verified or removed
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
            sb = await self._new()
        except Exception:  # the next acquire() starts one itself and raises the real error
            return
        finally:
            self._filling -= 1
        if self._closed or self._held() >= self.size:
            await sb.close()
            return
        self._fresh.append(sb)

    async def _new(self) -> Sandbox:
        sb = Sandbox(self.image, backend=self.backend, **self._options)
        await sb.start()
        self.stats["created"] += 1
        return sb

    async def acquire(self, *, trusted: bool = False) -> Sandbox:
        """A pristine sandbox: for untrusted code, one nobody used; for the harness's own commands
        (``trusted``), a verified recycled one when ready, else a fresh one."""
        if self._closed:
            raise RuntimeError("the pool is closed")
        if trusted and self._recycled:
            sb = self._recycled.pop()
        elif self._fresh:
            sb = self._fresh.pop()
        else:
            self.stats["cold_acquires"] += 1
            sb = await self._new()
        self._out[sb] = trusted
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
        victims = [*self._out, *self._recycling, *self._fresh, *self._recycled]
        self._out.clear()
        self._recycling.clear()
        self._fresh.clear()
        self._recycled.clear()
        self._reference.clear()
        await asyncio.gather(*(sb.close() for sb in victims), return_exceptions=True)

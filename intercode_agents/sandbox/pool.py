"""A warm pool of pristine sandboxes that refills in the background.

A released sandbox is reused only when it is verified pristine: its file-system diff against the
image is the same as when it was fresh (empty for most images) and no process beyond the ones it
started with is alive. Otherwise it is removed and a fresh one takes its place.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from intercode_agents.sandbox.sandbox import Change, Sandbox


class SandboxPool:
    def __init__(self, image: str, size: int = 2, *, reuse: bool = True, **sandbox_options: Any) -> None:
        if size < 1:
            raise ValueError("a pool needs size >= 1")
        self.image = image
        self.size = size
        self.reuse = reuse
        self._options = sandbox_options
        self._ready: asyncio.Queue[Sandbox] = asyncio.Queue()
        self._baseline: dict[Sandbox, tuple[frozenset[Change], int]] = {}
        self._out: set[Sandbox] = set()
        self._recycling: set[Sandbox] = set()  # released, being verified
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False
        self._error: BaseException | None = None
        self.stats = {"created": 0, "reused": 0, "replaced": 0}

    async def __aenter__(self) -> SandboxPool:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        """Create the first sandbox now (so errors surface here) and the rest in the background."""
        await self._ready.put(await self._fresh())
        for _ in range(self.size - 1):
            self._spawn()

    def _spawn(self) -> None:
        task = asyncio.create_task(self._fill())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _fill(self) -> None:
        try:
            sb = await self._fresh()
        except Exception as exc:  # surfaced to the next acquire()
            self._error = exc
            return
        if self._closed:
            await sb.close()
        else:
            await self._ready.put(sb)

    async def _fresh(self) -> Sandbox:
        sb = Sandbox(self.image, **self._options)
        await sb.start()
        self.stats["created"] += 1
        try:
            if self.reuse:
                changes, (_, ready_at) = await asyncio.gather(sb.diff(), sb.processes())
                self._baseline[sb] = (frozenset(changes), ready_at)
        except BaseException:
            await sb.close()
            raise
        return sb

    async def acquire(self) -> Sandbox:
        if self._closed:
            raise RuntimeError("the pool is closed")
        while self._ready.empty() and self._error is not None:
            error, self._error = self._error, None
            if not self._tasks:
                raise error
        sb = await self._ready.get()
        self._out.add(sb)
        return sb

    async def release(self, sb: Sandbox, *, dirty: bool = False) -> None:
        """Give ``sb`` back. It is verified in the background and reused only if pristine."""
        self._out.discard(sb)
        if self._closed:
            await sb.close()
            return
        self._recycling.add(sb)
        task = asyncio.create_task(self._recycle(sb, dirty))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _recycle(self, sb: Sandbox, dirty: bool) -> None:
        try:
            await self._verify_or_replace(sb, dirty)
        finally:
            self._recycling.discard(sb)

    async def _verify_or_replace(self, sb: Sandbox, dirty: bool) -> None:
        try:
            if self.reuse and not dirty:
                await sb.close_sessions()
                if await self.is_pristine(sb) and not self._closed:
                    self.stats["reused"] += 1
                    await self._ready.put(sb)
                    return
            self._baseline.pop(sb, None)
            self.stats["replaced"] += 1
            if not self._closed:
                self._spawn()
        except BaseException:
            await sb.close()
            raise
        await sb.close()

    async def drain(self) -> None:
        """Wait until every release has been verified and refills are done (tests, benchmarks)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def is_pristine(self, sb: Sandbox) -> bool:
        baseline = self._baseline.get(sb)
        if baseline is None or not sb.running:
            return False
        try:
            changes, (procs, _) = await asyncio.gather(sb.diff(), sb.processes())
        except Exception:
            return False
        # Anything started since the sandbox was handed out (a background job, say) is leftover state.
        leftovers = [pid for pid, start in procs.items() if start >= baseline[1]]
        return frozenset(changes) == baseline[0] and not leftovers

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
        victims = list(self._out | self._recycling)
        while not self._ready.empty():
            victims.append(self._ready.get_nowait())
        self._out.clear()
        self._recycling.clear()
        await asyncio.gather(*(sb.close() for sb in victims), return_exceptions=True)

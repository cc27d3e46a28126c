"""A cap on how much a sandbox may write to the engine's disk.

Where the engine can enforce a size on a container's writable layer (overlay2 on xfs mounted with
``pquota``, and other drivers with quotas), the cap is the kernel's: ``StorageOpt: {"size": ...}``,
and a write past it fails with ENOSPC. Elsewhere (overlay2 on ext4, the common case) nothing in the
engine can, so two things stand in:

- ``RLIMIT_FSIZE`` at the cap for every process of the sandbox: no single file grows past it (the
  write fails with EFBIG, or the writer gets SIGXFSZ);
- :class:`DiskGuard`, which measures the writable layer while the sandbox lives (its overlay upper
  directory where this host can read it, else the Engine API's ``SizeRw``) and, once it holds more
  than the cap and is still growing, stops every process in the sandbox but the harness's launcher,
  sessions included, and leaves a notice that the next command's output carries. The agent can still
  delete files and go on. Between two measurements a writer can pass the cap by what the disk writes
  in one interval: the host's disk is never filled, but the cap is not exact.
"""

from __future__ import annotations

import asyncio
import os
import stat
import time
from collections.abc import Awaitable, Callable

from intercode_agents.sandbox.cancelling import cancel_and_wait

GiB = 1 << 30
POLL_S = 0.5  # between measurements of the upper directory (slower when a walk takes long)
ENGINE_POLL_S = 2.0  # between the Engine API's size reports (each walks the layer in the engine)
SETTLE_S, SETTLE_TRIES = 0.1, 30  # after a stop: measured again until the usage holds still


def upper_usage(upper: str) -> int:
    """Bytes of disk the overlay upper directory ``upper`` takes (allocated blocks; hard links count
    once). Folders are opened without following symlinks, relative to their parent's descriptor, so
    a folder the container swaps for a symlink meanwhile never leads the walk onto the host."""
    total = 0
    seen: set[tuple[int, int]] = set()
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    stack: list[tuple[int, list[str]]] = []  # open folders (one per level) and their sub-folders to do

    def enter(fd: int) -> None:
        nonlocal total
        folders = []
        with os.scandir(fd) as entries:
            for entry in entries:
                try:
                    st = entry.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                if (st.st_dev, st.st_ino) not in seen:
                    seen.add((st.st_dev, st.st_ino))
                    total += st.st_blocks * 512
                if stat.S_ISDIR(st.st_mode):
                    folders.append(entry.name)
        stack.append((fd, folders))

    enter(os.open(upper, flags))
    while stack:
        fd, folders = stack[-1]
        if not folders:
            os.close(fd)
            stack.pop()
            continue
        name = folders.pop()
        try:
            child = os.open(name, flags, dir_fd=fd)
        except OSError:
            continue
        try:
            enter(child)
        except OSError:
            os.close(child)
    return total


def describe(n: int) -> str:
    return f"{n / GiB:.2f} GiB" if n >= GiB else f"{n / (1 << 20):.1f} MiB"


class DiskGuard:
    """Watches one sandbox's writable layer against its cap (see the module docstring)."""

    def __init__(
        self,
        limit: int,
        measure: Callable[[], Awaitable[int]],
        stop_all: Callable[[], Awaitable[None]],
        *,
        interval: float = POLL_S,
    ) -> None:
        self.limit = limit
        self._measure = measure
        self._stop_all = stop_all
        self.interval = interval
        self._stopped_at = 0  # the usage when the guard last stopped the sandbox
        self._notice: str | None = None
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self.stops = 0  # how many times the sandbox was stopped: sessions restart when it grows

    @property
    def watching(self) -> bool:
        return self._task is not None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._watch())

    async def close(self) -> None:
        if self._task is not None:
            await cancel_and_wait(self._task)
            self._task = None

    def take_notice(self) -> str | None:
        """The message for the agent about the last stop, once."""
        notice, self._notice = self._notice, None
        return notice

    async def check(self) -> bool:
        """Measure now; stop the sandbox if it is over its cap and still growing. True if stopped."""
        async with self._lock:
            return await self._check()

    async def _check(self) -> bool:
        used = await self._measure()
        if used <= self.limit or used <= self._stopped_at + (1 << 20):
            return False
        self._notice = (  # set first: a session that dies under the stop reads it at once
            f"[the sandbox's files take {describe(used)}, over its disk cap of {describe(self.limit)}: "
            "every process in it was stopped (the shell restarts, its state is lost). Delete files to "
            "write more.]"
        )
        self.stops += 1
        await self._stop_all()
        self._stopped_at = await self._settled()
        return True

    async def _settled(self) -> int:
        """The usage once two measurements a moment apart agree (a few seconds at most): what a
        killed writer had in flight can still land after its signal, and is not the agent's next
        write. (CI once saw a flood grow past the measurement taken just after the stop; the next
        command was stopped again for it.)"""
        last = await self._measure()
        for _ in range(SETTLE_TRIES):
            await asyncio.sleep(SETTLE_S)
            now = await self._measure()
            if now == last:
                break
            last = now
        return last

    async def _watch(self) -> None:
        while True:
            started = time.perf_counter()
            try:
                await self.check()
            except asyncio.CancelledError:
                raise
            except Exception:  # the container is going away; its removal ends this task
                pass
            walk = time.perf_counter() - started
            await asyncio.sleep(max(self.interval, 4 * walk))

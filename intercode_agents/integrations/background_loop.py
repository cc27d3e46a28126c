"""The event loop the synchronous adapters run our async envs on: one per process, on a daemon thread.

SkyRL-gym calls an env's ``init``, ``step`` and ``close`` from its generator's worker threads (or,
with ``max_env_workers=0``, from the generator's own event-loop thread), and TRL calls ``reset`` and
the tools from its trainer's thread; all of them call synchronously and expect an answer. Our envs
are async, and the envs of one event loop share their warm sandbox pools. So every adapter instance
of a process runs its episodes on the one loop of this module, started on first use in a daemon
thread: :func:`run` hands a coroutine over (``run_coroutine_threadsafe``) and waits for its result.
Many envs in many threads share one loop and its pools; nothing calls ``asyncio.run`` in the caller's
thread (where a running loop, as in SkyRL's generator, would refuse it). A call made on a running
loop's thread blocks that loop while it waits: correct, but it serialises that loop's work (SkyRL
with ``max_env_workers=0``).

Nothing is left behind: :func:`track` keeps every live rollout, and at interpreter exit they are
closed on the loop (their unsubmitted episodes recorded, their sandboxes removed) before the sandbox
layer's own exit hook removes anything still registered. A child made by ``fork`` gets a loop of its
own: the parent's thread does not exist in it. :func:`records_to` gives the adapters of a process one
record file per folder, named after the process, so the workers of a trainer never interleave lines.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import os
import threading
import weakref
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

from intercode_agents.runner.rollout import Rollout
from intercode_agents.runner.run_dir import RecordWriter
from intercode_agents.sandbox import close_engines
from intercode_agents.trajectory import Trajectory

T = TypeVar("T")
EXIT_WAIT_S = 60.0

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_live: weakref.WeakSet[Rollout] = weakref.WeakSet()
_writers: dict[Path, RecordWriter] = {}


def loop() -> asyncio.AbstractEventLoop:
    """The process's adapter loop, started on first use."""
    global _loop
    with _lock:
        if _loop is None or _loop.is_closed():
            started = threading.Event()
            fresh = asyncio.new_event_loop()

            def serve() -> None:
                asyncio.set_event_loop(fresh)
                fresh.call_soon(started.set)
                fresh.run_forever()

            threading.Thread(target=serve, name="intercode-adapter-loop", daemon=True).start()
            started.wait()
            _loop = fresh
        return _loop


def run(coro: Coroutine[Any, Any, T], *, timeout: float | None = None) -> T:
    """Run ``coro`` on the adapter loop and return its result (its exception is raised here)."""
    target = loop()
    try:
        current = asyncio.get_running_loop()
    except RuntimeError:
        current = None
    if current is target:
        coro.close()
        raise RuntimeError(
            "a blocking adapter call was made on the adapter loop itself: it would wait forever"
        )
    future = asyncio.run_coroutine_threadsafe(coro, target)
    try:
        return future.result(timeout)
    except concurrent.futures.TimeoutError:
        future.cancel()
        raise TimeoutError(f"the env call took longer than {timeout:g} s and was cancelled") from None


def track(rollout: Rollout) -> Rollout:
    """Keep ``rollout`` so that it is closed at interpreter exit if its owner never closed it."""
    _live.add(rollout)
    return rollout


def close_soon(rollout: Rollout) -> None:
    """Close ``rollout`` on the loop without waiting (for a finalizer, which may run on any thread)."""
    if _loop is not None and not _loop.is_closed() and _loop.is_running():
        asyncio.run_coroutine_threadsafe(rollout.close("the env object was garbage-collected"), _loop)


def records_to(folder: str | Path | None) -> Callable[[Trajectory], None] | None:
    """Where the rollouts of this process record their episodes: ``FOLDER/trajectories-<pid>.jsonl``
    (appended, each record fsynced), or nowhere for None."""
    if folder is None:
        return None
    path = Path(folder).expanduser().resolve() / f"trajectories-{os.getpid()}.jsonl"
    with _lock:
        if path not in _writers:
            path.parent.mkdir(parents=True, exist_ok=True)
            _writers[path] = RecordWriter(path)
        return _writers[path].write


@atexit.register
def _close_all() -> None:
    live = list(_live)
    if _loop is None or not _loop.is_running():
        return

    async def close_every() -> None:
        await asyncio.gather(*(r.close("the process is exiting") for r in live), return_exceptions=True)
        await close_engines()  # the loop's engine connections

    try:
        asyncio.run_coroutine_threadsafe(close_every(), _loop).result(EXIT_WAIT_S)
    except Exception:
        pass  # the sandbox layer's exit hook removes what is left


def _forget_after_fork() -> None:
    global _loop, _lock
    _loop, _lock = None, threading.Lock()
    _live.clear()
    _writers.clear()  # (a child names its own file)


os.register_at_fork(after_in_child=_forget_after_fork)

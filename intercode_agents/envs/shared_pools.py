"""Sandbox resources shared by the envs of one event loop, reference-counted.

Many envs (one per concurrent episode) draw from one warm pool per image, so a run keeps a few
containers ready instead of one per env. Envs never share a sandbox from a pool: each acquires its
own, and a released sandbox is reused only after the pool verified it pristine.

The SQL env shares long-lived sandboxes instead (a server for the agents and one for the golds, see
``envs/sql/server.py``): each episode runs on a fresh connection of its env's own read-only account.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from intercode_agents.sandbox import Sandbox, SandboxPool

R = TypeVar("R", Sandbox, SandboxPool)
_Key = tuple[str, str, tuple[tuple[str, str], ...]]  # (kind, image, options)

_shared: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[_Key, list[Any]]] = (
    weakref.WeakKeyDictionary()
)
_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()


def _state() -> tuple[dict[_Key, list[Any]], asyncio.Lock]:
    loop = asyncio.get_running_loop()
    return _shared.setdefault(loop, {}), _locks.setdefault(loop, asyncio.Lock())


async def _open(key: _Key, create: Callable[[], Awaitable[R]], again: Callable[[R], None]) -> R:
    """The resource under ``key`` (created on first use); each call takes one reference."""
    shared, lock = _state()
    async with lock:
        if key in shared:
            entry = shared[key]
            entry[1] += 1
            again(entry[0])
            return entry[0]
        resource = await create()
        shared[key] = [resource, 1]
        return resource


async def _close(resource: R, still_used: Callable[[R], None]) -> None:
    """Drop one reference; the last one closes the resource and removes its containers."""
    shared, lock = _state()
    async with lock:
        for key, entry in list(shared.items()):
            if entry[0] is resource:
                entry[1] -= 1
                if entry[1] > 0:
                    still_used(resource)
                    return
                del shared[key]
                break
    await resource.close()


def _key(kind: str, image: str, options: dict[str, Any]) -> _Key:
    return kind, image, tuple(sorted((k, repr(v)) for k, v in options.items()))


async def open_pool(image: str, size: int, **options: Any) -> SandboxPool:
    """A started pool for ``image`` (on ``options["backend"]``, one pool per engine), shared: each
    opener adds ``size`` to the sandboxes it may hold. It keeps ready what its measured demand needs
    (an adaptive pool, see :mod:`intercode_agents.sandbox.pool`)."""

    async def create() -> SandboxPool:
        pool = SandboxPool(image, size=size, adaptive=True, **options)
        await pool.start()
        return pool

    return await _open(_key("pool", image, options), create, lambda pool: pool.grow(size))


async def close_pool(pool: SandboxPool, size: int) -> None:
    """Drop the reference of an opener that added ``size``; its share goes with it."""
    await _close(pool, lambda p: p.shrink(size))


async def open_shared(image: str, **options: Any) -> Sandbox:
    """One long-lived sandbox per image, shared by envs whose isolation unit is a session."""
    return await _open(_key("shared", image, options), Sandbox(image, **options).start, lambda sb: None)


async def close_shared(sb: Sandbox) -> None:
    await _close(sb, lambda _: None)

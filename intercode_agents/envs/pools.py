"""Sandbox pools shared by the envs of one event loop.

Many envs (one per concurrent episode) draw from one warm pool per image, so a run keeps a few
containers ready instead of one per env. Envs never share a sandbox: each acquires its own, and a
released sandbox is reused only after the pool verified it pristine.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

from intercode_agents.sandbox import Sandbox, SandboxPool

_Key = tuple[str, tuple[tuple[str, Any], ...]]
_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[_Key, tuple[SandboxPool, int]]] = (
    weakref.WeakKeyDictionary()
)
_lock: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()


def _state() -> tuple[dict[_Key, tuple[SandboxPool, int]], asyncio.Lock]:
    loop = asyncio.get_running_loop()
    return _pools.setdefault(loop, {}), _lock.setdefault(loop, asyncio.Lock())


def _key(image: str, options: dict[str, Any]) -> _Key:
    return image, tuple(sorted((k, repr(v)) for k, v in options.items()))


async def open_pool(image: str, size: int, **options: Any) -> SandboxPool:
    """A started pool for ``image``, shared: each opener adds ``size`` sandboxes of capacity."""
    pools, lock = _state()
    key = _key(image, options)
    async with lock:
        if key in pools:
            pool, refs = pools[key]
            pool.grow(size)
            pools[key] = (pool, refs + 1)
            return pool
        pool = SandboxPool(image, size=size, **options)
        await pool.start()
        pools[key] = (pool, 1)
        return pool


async def close_pool(pool: SandboxPool) -> None:
    """Drop one reference; the last one closes the pool and removes its containers."""
    pools, lock = _state()
    async with lock:
        for key, (candidate, refs) in list(pools.items()):
            if candidate is pool:
                if refs > 1:
                    pools[key] = (pool, refs - 1)
                    return
                del pools[key]
                break
    await pool.close()


_shared: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[_Key, tuple[Sandbox, int]]] = (
    weakref.WeakKeyDictionary()
)


async def open_shared(image: str, **options: Any) -> Sandbox:
    """One long-lived sandbox per image, shared by envs whose isolation unit is a session.

    The SQL env uses it: the server's data are read-only for the agent's account, so each episode's
    fresh connection (a new helper process) is a pristine state without a container of its own.
    """
    shared = _shared.setdefault(asyncio.get_running_loop(), {})
    _, lock = _state()
    key = _key(image, options)
    async with lock:
        if key in shared:
            sb, refs = shared[key]
            shared[key] = (sb, refs + 1)
            return sb
        sb = await Sandbox(image, **options).start()
        shared[key] = (sb, 1)
        return sb


async def close_shared(sb: Sandbox) -> None:
    shared = _shared.setdefault(asyncio.get_running_loop(), {})
    _, lock = _state()
    async with lock:
        for key, (candidate, refs) in list(shared.items()):
            if candidate is sb:
                if refs > 1:
                    shared[key] = (sb, refs - 1)
                    return
                del shared[key]
                break
    await sb.close()

"""Envs whose episodes each get their own pristine sandbox from a shared, verified pool.

With several engines (the env's ``backend`` is an engine set), each episode is placed on the engine
with the most free capacity when it takes its sandbox, and its other sandboxes (the gold's, the
scoring's) come from the same engine; pools are kept per engine and image.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from intercode_agents.envs.base import ActionResult, Env
from intercode_agents.envs.shared_pools import close_pool, open_pool
from intercode_agents.envs.task_files import TaskFileWatch
from intercode_agents.errors import SandboxTampered, SessionDied
from intercode_agents.images import image_ref
from intercode_agents.sandbox import Backend, ExecResult, Sandbox, SandboxPool
from intercode_agents.trajectory import TaskFiles


def timeout_note(result: ExecResult, timeout: float) -> str:
    """The marker appended to an observation whose command hit its deadline."""
    if not result.timed_out:
        return ""
    note = f"\n[timed out after {timeout:g}s"
    return note + ("; the session was restarted]" if result.restarted else "]")


class PooledEnv(Env):
    """Keeps one sandbox per episode; pools are opened lazily per image and shared across envs."""

    default_image: str = "bash"  # the image of tool mode (an env used with no task)

    def __init__(
        self, *, pool_size: int = 1, sandbox_options: dict[str, Any] | None = None, **kw: Any
    ) -> None:
        super().__init__(**kw)
        self.pool_size = pool_size
        self.sandbox_options = dict(sandbox_options or {})
        self._pools: dict[tuple[str, str], tuple[SandboxPool, int]] = {}  # (engine, image) -> pool, share
        self.sandbox: Sandbox | None = None
        self._sandbox_pool: SandboxPool | None = None
        self._engine: Backend | None = None  # the engine of the current episode
        self._task_files: TaskFileWatch | None = None  # the current episode's task files

    @property
    def engine(self) -> Backend:
        """The engine the current episode's sandboxes come from."""
        if self._engine is None:
            self._engine = self.engines.choose()
        return self._engine

    async def pool(self, image: str) -> SandboxPool:
        """The pool of ``image`` on the current episode's engine. With several engines each adds its
        share of ``pool_size``, so the warm sandboxes of an env stay about ``pool_size`` in all."""
        backend = self.engine
        key = (backend.name, image)
        if key not in self._pools:
            share = math.ceil(self.pool_size / len(self.engines))
            pool = await open_pool(image_ref(image), share, backend=backend, **self.sandbox_options)
            self._pools[key] = (pool, share)
        return self._pools[key][0]

    async def take_sandbox(self, image: str) -> Sandbox:
        """Hand back the current sandbox (if any) and take one of ``image`` that nobody used: the
        agent's, on the engine with the most free capacity. It is removed when it comes back."""
        await self.return_sandbox()
        self._engine = self.engines.choose()
        pool = await self.pool(image)
        self.sandbox = await pool.acquire()
        self._sandbox_pool = pool
        return self.sandbox

    async def return_sandbox(self) -> None:
        sb, pool = self.sandbox, self._sandbox_pool
        self.sandbox = self._sandbox_pool = None
        self._task_files = None
        if sb is not None and pool is not None:
            await pool.release(sb)

    async def borrow(self, image: str, *, trusted: bool) -> tuple[Sandbox, SandboxPool]:
        """A second pristine sandbox, to be given back with ``pool.release``. ``trusted``: only the
        harness's own commands (a gold, a probe) will run in it, so it may be a verified recycled one;
        otherwise it is one nobody used, removed on return (see :mod:`intercode_agents.sandbox.pool`)."""
        pool = await self.pool(image)
        return await pool.acquire(trusted=trusted), pool

    async def _watch_task_files(self) -> None:
        """Record the task directories' entries in the episode's sandbox as it starts."""
        self._task_files = None
        if self.task_dirs and self.sandbox is not None:
            self._task_files = await TaskFileWatch.begin(self.sandbox, self.task_dirs)

    async def task_files_now(self) -> TaskFiles | None:
        if self._task_files is None or self.sandbox is None:
            return None
        return await self._task_files.measure(self.sandbox)

    async def _check_engine(self) -> None:
        """Raise EngineUnavailable when the engine of the agent's sandbox does not answer."""
        await (self.sandbox.backend if self.sandbox is not None else self.engine).ping()

    async def _agent_side_broken(self, exc: SessionDied) -> bool:
        """The agent's sandbox is gone when its container stopped or cannot run the simplest command
        any more (its launcher and sessions killed, its process table full), and cannot answer for
        itself when the agent changed the programs that read its files (on an engine whose host
        cannot read them)."""
        if self.sandbox is None:
            return False
        if isinstance(exc, SandboxTampered):
            return exc.sandbox_id == self.sandbox.id
        return not await self.sandbox.responds()

    def _annotate(self, result: ActionResult) -> ActionResult:
        notice = self.sandbox.take_notice() if self.sandbox is not None else None
        if notice is None:
            return result
        return dataclasses.replace(result, observation=f"{result.observation}\n{notice}", errored=True)

    async def ensure_tool_mode(self) -> None:
        """An env used before any reset is a live sandbox of its default image."""
        if self.sandbox is None:
            await self.take_sandbox(self.default_image)
            await self.on_tool_mode()

    async def on_tool_mode(self) -> None:
        """Start the session of tool mode."""

    async def close(self) -> None:
        await self.return_sandbox()
        pools, self._pools = self._pools, {}
        for pool, share in pools.values():
            await close_pool(pool, share)

"""The Bash env: NL2Bash tasks on prepared file systems, scored by file-system changes and output.

Actions run in a persistent bash session exactly as written. At scoring time the gold command runs
in its own pristine sandbox of the same image (kept for the episode, so Try Again can re-score every
turn cheaply), and both containers are compared: Docker's change list, content digests of the changed
paths, and the TF-IDF similarity of the outputs (see :mod:`intercode_agents.rewards.bash`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from intercode_agents.datasets import Task
from intercode_agents.envs.base import ActionResult
from intercode_agents.envs.pooled import PooledEnv, timeout_note
from intercode_agents.rewards import (
    BashSide,
    FsChange,
    PathDigest,
    ProbeRequest,
    RewardResult,
    bash_reward,
    parse_probe_output,
    paths_to_probe,
    probe_command,
)
from intercode_agents.sandbox import Sandbox, SandboxPool, ShellSession


@dataclass
class _Gold:
    sandbox: Sandbox
    pool: SandboxPool
    changes: tuple[FsChange, ...]
    output: str | None


async def changes_of(sb: Sandbox) -> tuple[FsChange, ...]:
    return tuple(FsChange(c.path, c.kind) for c in await sb.diff())


async def probe(sb: Sandbox, request: ProbeRequest) -> dict[str, PathDigest]:
    if not len(request):
        return {}
    result = await sb.exec(probe_command(request), timeout=120, output_cap=64 << 20)
    return parse_probe_output(result.output)


class BashEnv(PooledEnv):
    name = "bash"
    language = "bash"
    default_image = "bash"

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.shell: ShellSession | None = None
        self._gold: _Gold | None = None

    async def _prepare(self, task: Task) -> None:
        await self._drop_gold()
        sb = await self.take_sandbox(task.image)
        self.shell = await sb.shell()

    async def on_tool_mode(self) -> None:
        assert self.sandbox is not None
        self.shell = await self.sandbox.shell()

    async def _execute(self, action: str) -> ActionResult:
        await self.ensure_tool_mode()
        assert self.shell is not None
        r = await self.shell.run(action, timeout=self.action_timeout)
        return ActionResult(
            observation=r.output + timeout_note(r, self.action_timeout),
            exit_code=r.exit_code,
            errored=r.exit_code != 0,
            timed_out=r.timed_out,
            output_truncated=r.truncated,
            duration_s=r.duration_s,
        )

    async def _gold_side(self, task: Task) -> _Gold:
        if self._gold is None:
            sb, pool = await self.borrow(task.image)
            try:
                r = await sb.exec(["bash", "-c", task.gold], timeout=max(self.action_timeout, 60))
                output = None if r.timed_out else r.output
                self._gold = _Gold(sb, pool, await changes_of(sb), output)
            except BaseException:
                await pool.release(sb, dirty=True)
                raise
        return self._gold

    async def _score(self, submission: str) -> RewardResult:
        task = self._require_task()
        assert self.sandbox is not None
        gold = await self._gold_side(task)
        agent_changes = await changes_of(self.sandbox)
        request = paths_to_probe(agent_changes, gold.changes, self.reward_mode)
        agent_digests, gold_digests = await asyncio.gather(
            probe(self.sandbox, request), probe(gold.sandbox, request)
        )
        base = await self._base_digests(task, request) if _has_modified(agent_changes, gold.changes) else None
        return bash_reward(
            BashSide(agent_changes, agent_digests, submission),
            BashSide(gold.changes, gold_digests, gold.output),
            self.reward_mode,
            base_digests=base,
        )

    async def _base_digests(self, task: Task, request: ProbeRequest) -> dict[str, PathDigest]:
        """The same paths in a pristine sandbox, so a file only touched (not changed) drops out."""
        sb, pool = await self.borrow(task.image)
        try:
            return await probe(sb, request)
        finally:
            await pool.release(sb)

    async def _drop_gold(self) -> None:
        gold, self._gold = self._gold, None
        if gold is not None:
            await gold.pool.release(gold.sandbox)  # reused only if verified pristine

    async def close(self) -> None:
        await self._drop_gold()
        self.shell = None
        await super().close()


def _has_modified(*sides: tuple[FsChange, ...]) -> bool:
    return any(c.kind == "C" for side in sides for c in side)

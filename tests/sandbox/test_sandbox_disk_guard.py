"""The disk cap's guard stops a sandbox once per flood: what lands just after its stop is not taken
for the agent's next write."""

from __future__ import annotations

import asyncio

from intercode_agents.sandbox import Sandbox
from intercode_agents.sandbox.disk_guard import DiskGuard
from intercode_agents.sandbox.signals import start_helper
from intercode_agents.sandbox.stream import ProcessStream

MiB = 1 << 20
LATE = "echo began; for i in $(seq 30); do head -c 1M /dev/zero >> /tmp/late; sleep 0.02; done"


async def drain(proc: ProcessStream) -> None:
    try:
        while await proc.read(10.0) is not None:
            pass
    finally:
        await proc.close()


async def test_writes_that_land_just_after_a_stop_do_not_stop_the_sandbox_again(bash_image):
    async with Sandbox(bash_image, disk_limit=None) as sb:
        late: list[asyncio.Task[None]] = []

        async def stop_all() -> None:
            # Stands in for a killed writer whose last blocks land after its signal: a writer still
            # busy as the stop ends, measured by the guard while its blocks land.
            await sb.stop_everything()
            writer = await start_helper(sb.backend, sb.id, ["sh", "-c", LATE])
            assert await writer.read(10.0) == b"began\n"
            late.append(asyncio.create_task(drain(writer)))

        guard = DiskGuard(10 * MiB, sb.disk_usage, stop_all)
        assert (await sb.exec("head -c 20M /dev/zero > /tmp/flood")).exit_code == 0
        assert await guard.check()  # over the cap and growing: stopped
        await late[0]
        assert await sb.disk_usage() > 50 * MiB
        assert not await guard.check() and guard.stops == 1  # nothing grew since the stop settled
        assert (await sb.exec("head -c 2M /dev/zero > /tmp/more")).exit_code == 0
        assert await guard.check() and guard.stops == 2  # a write after that is growth again

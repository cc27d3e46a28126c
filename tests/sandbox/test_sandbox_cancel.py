"""A cancel always reaches the task it was meant for: a read whose output arrives in the same step,
and a close that waits for a helper task of its own, both end cancelled. SIGTERM on ``eval`` relies
on it: one absorbed cancel and a worker played every remaining episode before the run stopped."""

from __future__ import annotations

import asyncio

import pytest

from intercode_agents.sandbox import Sandbox
from intercode_agents.sandbox.cancelling import cancel_and_wait
from intercode_agents.sandbox.signals import start_helper


async def test_a_read_cancelled_as_its_output_arrives_ends_cancelled(bash_image):
    async with Sandbox(bash_image) as sb:
        proc = await start_helper(sb.backend, sb.id, ["sh", "-c", "sleep 0.3; echo late; sleep 30"])
        channel = proc._channel
        assert channel is not None
        real_read = channel.read
        reader: asyncio.Task[bytes | None] | None = None

        async def read_and_cancel_the_reader():  # the output and the cancel land in one step
            msg = await real_read()
            assert reader is not None
            reader.cancel()
            return msg

        channel.read = read_and_cancel_the_reader  # type: ignore[method-assign]
        reader = asyncio.create_task(proc.read(10.0))
        with pytest.raises(asyncio.CancelledError):
            await reader
        await proc.close()


async def test_a_close_cancelled_while_its_helper_winds_down_ends_cancelled():
    winding_down = asyncio.Event()

    async def helper() -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            winding_down.set()
            await asyncio.sleep(0.5)  # its clean-up takes a while
            raise

    task = asyncio.create_task(helper())
    await asyncio.sleep(0)
    closing = asyncio.create_task(cancel_and_wait(task))
    await winding_down.wait()
    closing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await closing
    assert not task.done()  # the helper's own clean-up goes on
    await asyncio.wait({task})
    assert task.cancelled()


async def test_a_closed_helpers_error_is_consumed_not_raised():
    async def failing() -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            raise RuntimeError("broke on the way out") from None

    task = asyncio.create_task(failing())
    await asyncio.sleep(0)
    await cancel_and_wait(task)
    assert isinstance(task.exception(), RuntimeError)

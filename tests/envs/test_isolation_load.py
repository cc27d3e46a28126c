"""Issue finding 12: many concurrent episodes in one process complete, and a cancelled run leaves
no container behind, even without `intercode-agents cleanup`."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid

from intercode_agents import make_env
from intercode_agents.datasets import select_tasks
from intercode_agents.sandbox import RUN_ID
from tests.docker_helpers import containers_of_run

CONCURRENT = 32


async def _episode(task, action: str | None = None) -> float:
    async with make_env("bash", facts_cache="process") as env:
        await env.reset(task=task)
        await env.gym.step(action or task.gold)
        _, reward, *_ = await env.gym.step("submit")
        return reward


async def test_32_concurrent_bash_episodes_complete_without_a_hang():
    tasks = select_tasks("bash", "mini")
    async with asyncio.timeout(540):
        rewards = await asyncio.gather(*(_episode(tasks[i % len(tasks)]) for i in range(CONCURRENT)))
    assert rewards == [1.0] * CONCURRENT
    await asyncio.sleep(0)
    assert containers_of_run(RUN_ID) == []


SCRIPT = f"""
import asyncio
import signal
# Ctrl-C raises KeyboardInterrupt even when the suite was started where SIGINT is ignored (a
# background job of a non-interactive shell), which the child would otherwise inherit.
signal.signal(signal.SIGINT, signal.default_int_handler)
from tests.envs.test_isolation_load import _episode
from intercode_agents.datasets import select_tasks
tasks = select_tasks("bash", "mini")
async def main():  # (each episode waits in its sandbox, so the interrupt lands mid-run)
    await asyncio.gather(*(_episode(tasks[i % len(tasks)], "sleep 25") for i in range({CONCURRENT})))
print("started", flush=True)
asyncio.run(main())
"""


def test_an_interrupted_run_of_32_episodes_leaves_no_container():
    run_id = "cancel-" + uuid.uuid4().hex[:8]
    env = os.environ | {"INTERCODE_AGENTS_RUN_ID": run_id}
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT], env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "started"
    deadline = time.monotonic() + 120
    while len(containers_of_run(run_id)) < 8 and time.monotonic() < deadline:
        time.sleep(0.2)  # wait until the run is in full flight: containers starting and running
    assert containers_of_run(run_id), "the run never started a container"
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=180) != 0
    assert containers_of_run(run_id) == []

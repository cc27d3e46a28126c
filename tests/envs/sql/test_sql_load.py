"""Many concurrent SQL episodes in one process: all finish, on two servers within their limits.

32 envs (make_env + reset + step + submit, one asyncio.gather) each own an account and a helper on
the agents' server; the gold server serves them all with a few helpers of its own.
``benchmarks/bench_sql_load.py`` runs the same at 64 and prints the time and memory.
"""

from __future__ import annotations

import asyncio
import json
import subprocess

from intercode_agents.datasets import get_task, select_tasks
from intercode_agents.envs import make_env
from intercode_agents.envs.sql.env import SqlEnv
from intercode_agents.envs.sql.gold import GOLD_HELPERS, clear_gold_cache
from intercode_agents.envs.sql.server import SERVER_OPTIONS
from tests.sql_server_view import sql_servers

EPISODES = 32
COUNT_HELPERS = """
import os
helper = b"python3\\0/opt/intercode/sqlhelper.py\\0"
n = 0
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            n += f.read() == helper
    except OSError:
        pass  # it ended meanwhile
print(n)
"""
UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def size(text: str) -> int:
    """Bytes of a ``docker stats`` size ("812.5MiB", "3GiB")."""
    text = text.strip()
    unit = next(u for u in sorted(UNITS, key=len, reverse=True) if text.endswith(u))
    return int(float(text.removesuffix(unit)) * UNITS[unit])


def helpers_and_memory(container: str) -> tuple[int, int, int]:
    """(sqlhelper processes, memory used in bytes, memory limit in bytes) of one server."""
    procs = subprocess.run(
        ["docker", "exec", container, "python3", "-c", COUNT_HELPERS],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    stats = subprocess.run(
        ["docker", "stats", "--no-stream", "--format", "{{json .}}", container],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    used, limit = json.loads(stats)["MemUsage"].split(" / ")
    return int(procs.strip()), size(used), size(limit)


async def episode(n: int, task_ids: list[str], arrived: asyncio.Barrier, counted: asyncio.Event) -> float:
    async with make_env("sql", action_timeout=60) as env:
        assert isinstance(env, SqlEnv)
        task = task_ids[n % len(task_ids)]
        await env.reset(task_id=task)
        await env.gym.step(get_task(task).gold)
        await arrived.wait()  # every env holds its helper now: count them before any closes
        await counted.wait()
        _, reward, *_ = await env.gym.step("submit")
        return reward


async def test_32_concurrent_sql_episodes_finish_within_the_servers_limits() -> None:
    clear_gold_cache()
    task_ids = [t.id for t in select_tasks("sql", "spider")[:EPISODES]]
    arrived, counted = asyncio.Barrier(EPISODES + 1), asyncio.Event()
    run = asyncio.gather(*(episode(n, task_ids, arrived, counted) for n in range(EPISODES)))
    async with asyncio.timeout(300):
        await arrived.wait()
        usage = [await asyncio.to_thread(helpers_and_memory, c) for c in sql_servers()]
        counted.set()
        rewards = await run
    assert rewards == [1.0] * EPISODES
    limit = size(SERVER_OPTIONS["memory"].upper().replace("G", "GiB"))
    gold, agents = sorted(h for h, _, _ in usage)
    assert agents == EPISODES and gold <= GOLD_HELPERS, usage  # one per env, a few for every gold
    assert all(used < limit / 2 and lim == limit for _, used, lim in usage), usage
    print(f"helpers and memory of the servers at {EPISODES} concurrent episodes: {usage}")

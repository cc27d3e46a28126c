"""Concurrent SQL episodes in one process: wall time, the harness's peak memory, the servers' memory.

    python benchmarks/bench_sql_load.py                  # 64 episodes, three rounds
    python benchmarks/bench_sql_load.py --episodes 32,64,128 --rounds 1

Each round is one ``asyncio.gather`` of N episodes (``make_env("sql")`` + reset + the gold + submit,
each env with its own account and helper on the agents' server), from a new process state: the
servers start, every gold runs on the gold server. While all N envs hold their helpers, the script
reads each server's memory (``docker stats``) and counts its helper processes; it prints those next
to the server's memory limit and the harness's peak RSS.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import time

from intercode_agents.datasets import Task, select_tasks
from intercode_agents.envs import make_env
from intercode_agents.envs.sql.gold import clear_gold_cache
from intercode_agents.envs.sql.server import ROLE_LABEL, SERVER_OPTIONS
from intercode_agents.sandbox import close_docker_client
from intercode_agents.sandbox.config import LABEL_RUN, RUN_ID

COUNT_HELPERS = (
    "import os\nn = 0\nfor p in filter(str.isdigit, os.listdir('/proc')):\n    try:\n"
    "        n += open(f'/proc/{p}/cmdline', 'rb').read() == b'python3\\0/opt/intercode/sqlhelper.py\\0'\n"
    "    except OSError:\n        pass\nprint(n)\n"
)


def servers() -> dict[str, str]:
    """{purpose: container id} of this process's SQL servers."""
    out = subprocess.run(
        ["docker", "ps", "-q", "--filter", f"label={LABEL_RUN}={RUN_ID}", "--filter", f"label={ROLE_LABEL}"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    found = {}
    for cid in out:
        labels = json.loads(subprocess.run(["docker", "inspect", "-f", "{{json .Config.Labels}}", cid],
                                           capture_output=True, text=True, check=True).stdout)  # fmt: skip
        found[labels[ROLE_LABEL]] = cid
    return found


def usage(cid: str) -> str:
    helpers = subprocess.run(["docker", "exec", cid, "python3", "-c", COUNT_HELPERS],
                             capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    stats = json.loads(subprocess.run(["docker", "stats", "--no-stream", "--format", "{{json .}}", cid],
                                      capture_output=True, text=True, check=True).stdout)  # fmt: skip
    return f"{stats['MemUsage']:>22} {helpers:>8}"


async def one(task: Task, arrived: asyncio.Barrier, measured: asyncio.Event) -> float:
    async with make_env("sql", action_timeout=60) as env:
        await env.reset(task=task)
        await env.gym.step(task.gold)
        await arrived.wait()
        await measured.wait()
        _, reward, *_ = await env.gym.step("submit")
        return reward


async def round_of(n: int, tasks: list[Task]) -> tuple[float, int, dict[str, str]]:
    clear_gold_cache()
    arrived, measured = asyncio.Barrier(n + 1), asyncio.Event()
    started = time.perf_counter()
    run = asyncio.ensure_future(
        asyncio.gather(*(one(tasks[i % len(tasks)], arrived, measured) for i in range(n)))
    )
    async with asyncio.timeout(600):
        await arrived.wait()
    paused = time.perf_counter()
    seen = {
        purpose: await asyncio.to_thread(usage, cid)
        for purpose, cid in (await asyncio.to_thread(servers)).items()
    }
    resumed = time.perf_counter()
    measured.set()
    async with asyncio.timeout(600):
        rewards = await run
    wall = time.perf_counter() - started - (resumed - paused)
    return wall, sum(r == 1.0 for r in rewards), seen


async def main(levels: list[int], rounds: int) -> None:
    tasks = select_tasks("sql", "spider")
    print(f"SQL servers: memory limit {SERVER_OPTIONS['memory']}, pids limit {SERVER_OPTIONS['pids_limit']}")
    print(f"{'episodes':>8} {'round':>5} {'wall s':>7} {'solved':>6} {'harness peak RSS':>17}   "
          f"{'agents: memory':>22} {'helpers':>8}   {'gold: memory':>22} {'helpers':>8}")  # fmt: skip
    for n in levels:
        for r in range(rounds):
            wall, solved, seen = await round_of(n, tasks)
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(f"{n:8d} {r + 1:5d} {wall:7.2f} {solved:6d} {rss:14.0f} MiB   "
                  f"{seen.get('agents', '-'):>31}   {seen.get('gold', '-'):>31}")  # fmt: skip
    await close_docker_client()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--episodes", default="64", help="comma-separated numbers of concurrent episodes")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main([int(n) for n in args.episodes.split(",")], args.rounds))

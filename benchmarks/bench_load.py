"""Many concurrent episodes in one process: wall time, throughput and the harness's peak memory.

    python benchmarks/bench_load.py [--episodes 64] [--envs bash,python,ctf,sql]

Each env runs ``--episodes`` episodes at once (one ``asyncio.gather`` of make_env + reset + one
action + submit, on the project's own tasks), the way a user's script would. It prints, per env,
the wall time, episodes per second, the harness's peak RSS (``ru_maxrss``, for the whole process so
far) and how many containers were left behind (always 0). On a 2-core machine the figures are bound
by the engine's CPU (container starts), not by Python.

The RSS depends on what is installed beside the project: the Bash reward's scikit-learn imports
pandas whenever pandas can be imported, and the RL extras (skyrl, trl) install it. The last line
names the large optional libraries this process ended up importing, so a figure is read with them.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import subprocess
import sys
import time

from intercode_agents import make_env
from intercode_agents.datasets import select_tasks
from intercode_agents.sandbox import RUN_ID, close_docker_client

# Imported only because an optional extra installed them (pandas: by scikit-learn, when present).
OPTIONAL_HEAVY = ("pandas", "torch", "transformers", "ray", "inspect_ai")
ACTIONS = {"bash": None, "sql": None, "python": "print(1)", "ctf": "ls"}  # None: the task's gold
SUBMIT = {"bash": "submit", "sql": "submit", "python": "submit f", "ctf": "submit picoCTF{guess}"}


async def episode(env_name: str, task) -> float:
    async with make_env(env_name) as env:
        await env.reset(task=task)
        await env.gym.step(ACTIONS[env_name] or task.gold)
        _, reward, *_ = await env.gym.step(SUBMIT[env_name])
        return reward


def leftovers() -> int:
    out = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=intercode-agents.run={RUN_ID}"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return len(out.stdout.split())


async def main(episodes: int, envs: list[str]) -> None:
    print(f"{'env':<7} {'episodes':>8} {'wall s':>8} {'episodes/s':>10} {'peak RSS MB':>12} {'left':>5}")
    for name in envs:
        tasks = select_tasks(name, "mini" if name != "ctf" else None)
        started = time.perf_counter()
        await asyncio.gather(*(episode(name, tasks[i % len(tasks)]) for i in range(episodes)))
        wall = time.perf_counter() - started
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{name:<7} {episodes:>8} {wall:>8.1f} {episodes / wall:>10.2f} {rss:>12.0f} {leftovers():>5}")
    await close_docker_client()
    optional = [m for m in OPTIONAL_HEAVY if m in sys.modules]
    print(f"large optional libraries imported: {', '.join(optional) or 'none'}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--episodes", type=int, default=64)
    parser.add_argument("--envs", default="bash,python,ctf,sql")
    args = parser.parse_args()
    asyncio.run(main(args.episodes, args.envs.split(",")))

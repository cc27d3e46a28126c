"""Groups of rollouts against single runs: k episodes of one Bash task with the gold policy.

    python benchmarks/bench_groups.py                      # k=8, bash/mini/0, 3 rounds
    python benchmarks/bench_groups.py --k 8 --task bash/test/3 --rounds 5 --pool-size 1

What GRPO asks of an env is k samples of one task. Four ways to get them, measured side by side in
one process, each round in turn (the median of the rounds is printed):

- ``singles``: k calls of ``play_group(k=1)``, one after the other, each making its env (and so its
  warm pool) and closing it: what a caller pays who asks for one episode at a time;
- ``singles, warm``: k episodes one after the other on one env kept open (its pool stays warm);
- ``group``: one ``play_group(k)`` call, its k envs made and closed by the call;
- ``group, warm``: one ``play_group(k, envs=...)`` on k envs kept open from one group to the next
  (what the scale-out work's Ray actor does).

The gold facts are computed once before timing (``facts_cache="process"``), so every mode scores
alike. Printed per mode: episodes per second, the harness's CPU milliseconds per episode (this
process: on a shared machine wall time falls with others' load, CPU per episode does not), and the
ratio to ``singles``. Before each timed call the kept envs' pools are left to settle (untimed): a
warm pool removes a used sandbox and starts its replacement in the background, which in training
overlaps the model's generation, and which must not be charged to whichever mode comes next.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from intercode_agents.envs import Env, make_env
from intercode_agents.runner.groups import play_group
from intercode_agents.runner.players import GoldPlayer
from intercode_agents.sandbox import close_docker_client
from intercode_agents.trajectory import Trajectory

Mode = Callable[[], Awaitable[list[Trajectory]]]


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def measure(mode: Mode, k: int) -> tuple[float, float]:
    """(episodes per second, harness CPU ms per episode) of one call of ``mode``, every episode solved."""
    cpu, wall = cpu_s(), time.perf_counter()
    played = await mode()
    wall, cpu = time.perf_counter() - wall, cpu_s() - cpu
    assert len(played) == k and all(t.solved for t in played), [(t.outcome, t.error) for t in played]
    return k / wall, 1000 * cpu / k


async def main(k: int, task: str, rounds: int, options: dict[str, Any]) -> None:
    player = GoldPlayer()

    async def opened(n: int) -> list[Env]:
        envs = [make_env("bash", **options) for _ in range(n)]
        for env in envs:
            await env.start()
        return envs

    one, kept = (await opened(1))[0], await opened(k)
    await play_group("bash", task, k, player, envs=kept)  # untimed: the gold facts, the warm pools

    async def singles() -> list[Trajectory]:
        return [t for _ in range(k) for t in await play_group("bash", task, 1, player, env_options=options)]

    async def singles_warm() -> list[Trajectory]:
        return [t for _ in range(k) for t in await play_group("bash", task, 1, player, envs=[one])]

    async def group() -> list[Trajectory]:
        return await play_group("bash", task, k, player, env_options=options)

    async def group_warm() -> list[Trajectory]:
        return await play_group("bash", task, k, player, envs=kept)

    modes: dict[str, Mode] = {
        "singles": singles,
        "singles, warm": singles_warm,
        "group": group,
        "group, warm": group_warm,
    }
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in modes}

    async def settle() -> None:
        """Untimed: the kept envs' pools finish removing used sandboxes and starting fresh ones, so no
        mode pays for the previous one's background work (in training the model generates meanwhile)."""
        for env in [one, *kept]:
            for pool, _ in list(env._pools.values()):
                await pool.drain()

    try:
        for _ in range(rounds):
            for name, mode in modes.items():
                await settle()
                results[name].append(await measure(mode, k))
    finally:
        for env in [one, *kept]:
            await env.close()
        await close_docker_client()

    base = statistics.median(rate for rate, _ in results["singles"])
    print(f"k={k} episodes of {task}, gold policy, {rounds} rounds (medians); env options {options}")
    print(f"{'mode':<16}{'episodes/s':>12}{'CPU ms/ep':>12}{'vs singles':>12}")
    for name, runs in results.items():
        rate = statistics.median(r for r, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        print(f"{name:<16}{rate:>12.2f}{cpu:>12.1f}{rate / base:>11.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--k", type=int, default=8, help="episodes per group")
    parser.add_argument("--task", default="bash/mini/0")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pool-size", type=int, default=None, help="warm sandboxes per env (the env's own)")
    args = parser.parse_args()
    env_options: dict[str, Any] = {"facts_cache": "process"}
    if args.pool_size is not None:
        env_options["pool_size"] = args.pool_size
    asyncio.run(main(args.k, args.task, args.rounds, env_options))

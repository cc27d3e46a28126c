"""What scoring a Python (MBPP) submission costs, now that it runs in a sandbox of its own.

    python benchmarks/bench_python_scoring.py                 # python/mini/0, 20 rounds, pool sizes 2 and 3
    python benchmarks/bench_python_scoring.py --rounds 50 --pool-sizes 3

Each round is one Try Again turn of an honest agent: a ``def`` runs in the REPL, then the state is
scored (``env.evaluate``), which takes a fresh sandbox from the pool, starts the scoring runner,
rebuilds the agent's cells, evaluates the tests' calls and gives the sandbox back to be removed (the
gold's results are cached after the first round, as in an episode). For comparison, the same round
also runs the task's asserts directly in the agent's REPL, which is what scoring cost when the tests
ran there (and what made it hackable). Printed side by side: the median wall time of each, their
ratio, and the containers the pool had to create. The pool refills in the background between
rounds; with a pool of 2 (the REPL's sandbox and one more) a scoring often finds none ready and
starts one itself.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

from intercode_agents.datasets import get_task
from intercode_agents.envs import make_env

DEF = "def second_largest(nums):\n    d = sorted(set(nums))[::-1]\n    return d[1] if len(d) > 1 else None"


async def _round(env: Any, tests: list[str], name: str) -> tuple[float, float, float]:
    started = time.perf_counter()
    await env.gym.step(DEF)
    stepped = time.perf_counter()
    result = await env.evaluate(name)
    scored = time.perf_counter()
    assert result.reward == 1.0, result
    code = "\n".join(tests)
    reply = await env.repl.request({"op": "exec", "code": code, "timeout": 10}, timeout=10)
    assert reply.get("ok"), reply
    in_repl = time.perf_counter()
    return stepped - started, scored - stepped, in_repl - scored


async def measure(task_id: str, rounds: int, pool_size: int) -> dict[str, Any]:
    task = get_task(task_id)
    tests, name = list(task.meta["tests"]), str(task.meta["entry_point"])
    async with make_env("python", pool_size=pool_size) as env:
        await env.reset(task=task)
        await _round(env, tests, name)  # the gold's results are computed and cached here
        pool = await env.pool(task.image)
        created, cold = pool.stats["created"], pool.stats["cold_acquires"]
        samples = [await _round(env, tests, name) for _ in range(rounds)]
        return {
            "pool": pool_size,
            "step": statistics.median(s[0] for s in samples),
            "score": statistics.median(s[1] for s in samples),
            "in_repl": statistics.median(s[2] for s in samples),
            "cold": pool.stats["cold_acquires"] - cold,
            "created": pool.stats["created"] - created,
            "rounds": rounds,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--task", default="python/mini/0")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--pool-sizes", default="2,3", help="comma-separated pool sizes to compare")
    args = parser.parse_args()
    print(f"{args.task}, {args.rounds} rounds per pool size (median wall times)")
    header = f"{'pool':>4} {'REPL step':>10} {'scoring':>10} {'asserts in REPL':>16} {'ratio':>7}"
    print(f"{header} {'containers made':>16} {'on demand':>10}")
    for size in (int(s) for s in args.pool_sizes.split(",")):
        row = asyncio.run(measure(args.task, args.rounds, size))
        ratio = row["score"] / row["in_repl"] if row["in_repl"] else float("inf")
        print(
            f"{row['pool']:>4} {row['step'] * 1e3:>8.1f}ms {row['score'] * 1e3:>8.1f}ms "
            f"{row['in_repl'] * 1e3:>14.1f}ms {ratio:>6.0f}x {row['created']:>16} {row['cold']:>10}"
        )
    print("containers made: during the timed rounds; on demand: scorings that found no ready sandbox")


if __name__ == "__main__":
    main()

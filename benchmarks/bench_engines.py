"""Gold-replay throughput on one engine against two engines, and the harness's CPU per episode.

    python benchmarks/bench_engines.py                       # bash fs1's first 50 tasks, concurrency 8
    python benchmarks/bench_engines.py --tasks test --concurrency 4 --second tcp://10.0.0.5:2376

Each configuration replays the golds of the same tasks through the runner (``run_eval`` with the
gold policy, as ``intercode-agents gold`` does), in one process, one after the other: the machine's
Docker engine alone, then the machine's engine and a second engine together (by default a second
dockerd on this host, started by ``tests/engines.py`` as the tests start it; run from the checkout's
root). Printed side by side: episodes per second, and the CPU milliseconds per episode of this
process (the harness: runner, envs, sandbox layer, engine clients), which does not depend on how
many engines there are or on other load on the machine.

On one 2-core host both engines share the same CPUs, so a second engine cannot add throughput: the
replay is CPU-bound (dockerd, containerd, runc and the containers' own work), and the ratio shows the
cost of placement and of a second engine's overhead, not the gain two hosts would give.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import sys
import time
from pathlib import Path
from tempfile import TemporaryDirectory

from intercode_agents.datasets import select_tasks
from intercode_agents.envs.bash.fact_store import clear_fact_stores
from intercode_agents.images import copy_refs, image_ref
from intercode_agents.runner.config import EvalConfig
from intercode_agents.runner.eval import run_eval


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _replay(
    tasks: str, limit: int | None, concurrency: int, engines: list[str]
) -> tuple[int, float, float, int]:
    with TemporaryDirectory(prefix="bench-engines-") as scratch:
        # A cache of its own: no gold fact stored by an earlier run (or configuration) is reused, so
        # every episode runs its gold in a pristine sandbox, as in a first run.
        os.environ["INTERCODE_AGENTS_CACHE"] = str(Path(scratch) / "cache")
        clear_fact_stores()
        cpu0, t0 = _cpu(), time.perf_counter()
        result = await run_eval(
            EvalConfig(
                env="bash",
                model="gold",
                selector=tasks,
                limit=limit,
                concurrency=concurrency,
                out_dir=Path(scratch) / "run",
                progress=False,
                engines=engines,
            )
        )
        wall, cpu = time.perf_counter() - t0, _cpu() - cpu0
    unsolved = sorted(r.task_id for r in result.records if r.reward != 1.0)
    if unsolved:
        print(f"{engines}: not solved: {', '.join(unsolved)}")
    return len(result.records), wall, cpu, len(result.records) - len(unsolved)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", default="fs1", help="bash task selector")
    parser.add_argument("--limit", type=int, default=50, help="first N (fs1/55's gold never ends)")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--second", default=None, help="the second engine (default: a second local dockerd)")
    args = parser.parse_args()

    second = args.second
    if second is None:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # for tests/engines.py
        from tests import engines

        second = engines.start("dockerd").spec
    refs = sorted({image_ref(t.image) for t in select_tasks("bash", args.tasks)})
    copy_refs(refs, source="docker", target=second)

    rows = []
    for label, engines_used in (("one engine", ["docker"]), ("two engines", ["docker", second])):
        n, wall, cpu, solved = asyncio.run(_replay(args.tasks, args.limit, args.concurrency, engines_used))
        rows.append((label, n, solved, wall, n / wall, 1000 * cpu / n))
    print(f"bash {args.tasks}, concurrency {args.concurrency}, gold replay from cold pools, no stored facts")
    print(f"{'':12} {'episodes':>8} {'solved':>6} {'wall s':>7} {'episodes/s':>10} {'harness CPU ms/ep':>17}")
    for label, n, solved, wall, rate, cpu_ms in rows:
        print(f"{label:12} {n:>8} {solved:>6} {wall:>7.1f} {rate:>10.2f} {cpu_ms:>17.1f}")
    print(f"two engines / one engine, episodes/s: {rows[1][4] / rows[0][4]:.2f}")


if __name__ == "__main__":
    main()

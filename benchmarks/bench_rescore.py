"""Where the time of re-scoring a Bash log goes, in both execution modes, side by side.

    python benchmarks/bench_rescore.py                                  # the fs_4 log, concurrency 1
    python benchmarks/bench_rescore.py --log LOG.json --limit 20 --concurrency 2

Re-scoring replays every logged action and scores the state after each one, as the original's Try
Again did. A score below 1 is checked again against a fresh gold run in a sandbox of its own (the
original ran the gold at every scoring), so most turns of a failed episode cost a live gold run. The
script wraps timers around the phases (it patches the methods at run time; the library is
unchanged) and prints, per execution mode, the seconds spent running the agent's actions, scoring
with the stored gold facts, and re-checking against a live gold, with the share of each, and the
paper-to-session ratio of the totals. Gold facts come from the store as in any run (memory is
cleared between the modes; the disk store may already hold them).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from intercode_agents.envs.bash import env as bash_env
from intercode_agents.envs.bash.fact_store import clear_fact_stores
from intercode_agents.fidelity.rescore import rescore_file
from intercode_agents.sandbox import close_docker_client

DEFAULT_LOG = Path("../shared/intercode-results/bash/gpt-3.5/ic_bash_multiturn_gpt-3.5_10_turns_fs_4.json")
PHASES = {
    "run actions": [(bash_env.BashEnv, "_execute")],
    "gold facts (once per task)": [(bash_env.BashEnv, "_facts")],
    "score with stored facts": [(bash_env.BashEnv, "_score_with_facts")],
    "re-check with a live gold": [(bash_env.BashEnv, "_score_with_live_gold")],
}
Timings = dict[str, list[float]]


def _timed(timings: Timings, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return await fn(*args, **kwargs)
        finally:
            timings[name].append(time.perf_counter() - started)

    return wrapper


def _patch(timings: Timings) -> list[tuple[type, str, Any]]:
    saved = []
    for name, targets in PHASES.items():
        for cls, attr in targets:
            original = getattr(cls, attr)
            saved.append((cls, attr, original))
            setattr(cls, attr, _timed(timings, name, original))
    return saved


async def measure(
    log: Path, execution: str, concurrency: int, limit: int | None
) -> tuple[Timings, float, int]:
    clear_fact_stores()
    timings: Timings = defaultdict(list)
    saved = _patch(timings)
    started = time.perf_counter()
    try:
        report = await rescore_file(
            log, execution=execution, concurrency=concurrency, limit=limit, progress=False
        )
    finally:
        for cls, attr, original in saved:
            setattr(cls, attr, original)
    scored = sum(t.ours is not None for e in report.episodes for t in e.turns)
    return timings, time.perf_counter() - started, scored


async def main(log: Path, concurrency: int, limit: int | None) -> None:
    results = {mode: await measure(log, mode, concurrency, limit) for mode in ("session", "paper")}
    await close_docker_client()
    print(f"{log.name}: {limit or 'all'} episodes, concurrency {concurrency}")
    header = f"{'phase':30}" + "".join(f"{mode:>26}" for mode in results)
    print(header)
    for name in PHASES:
        cells = []
        for timings, wall, _ in results.values():
            total, calls = sum(timings[name]), len(timings[name])
            cells.append(f"{total:7.1f} s {calls:5d}x {100 * total / wall:5.1f}%")
        print(f"{name:30}" + "".join(f"{c:>26}" for c in cells))
    print(f"{'wall':30}" + "".join(f"{wall:>24.1f} s" for _, wall, _ in results.values()))
    print(f"{'scored turns':30}" + "".join(f"{n:>26d}" for _, _, n in results.values()))
    paper, session = results["paper"][1], results["session"][1]
    print(f"paper / session wall time: {paper / session:.2f}")
    print("(phases overlap when concurrency > 1; the live re-check includes its gold run, diff and probes)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--log", type=Path, default=DEFAULT_LOG)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()
    asyncio.run(main(args.log, args.concurrency, args.limit))

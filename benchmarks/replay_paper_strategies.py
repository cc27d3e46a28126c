"""Fidelity check: replay the model replies of the paper's ReAct and Plan & Solve logs through our
``react`` and ``plan_solve`` strategies with the paper prompt set (``--set prompts=paper``).

    python benchmarks/replay_paper_strategies.py LOG.json [LOG.json ...] [-c 3] [--keys 0,5,12]

For each log, every entry's logged replies are played by a scripted chat model through our strategy,
in a real env (SQL; Bash with ``execution="paper"``, each action run as the original ran it), and the
script prints: the entries, how many ran the logged actions, how many ended with the logged success
(``summary.max_reward == 1``; and how many with its best reward, within 0.01), the log's success rate
and ours, and every entry whose actions or success differ, with where its actions part. How the
replies are rebuilt from the log: :mod:`intercode_agents.fidelity.strategy_replay`. The log is read
where it lies; nothing is copied.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time

from intercode_agents.fidelity.strategy_replay import EntryReplay, read_strategy_log, replay_log


def _rate(flags: list[bool]) -> float:
    return 100.0 * sum(flags) / len(flags) if flags else 0.0


async def replay_file(path: str, concurrency: int, keys: list[str] | None) -> None:
    log = read_strategy_log(path)
    started = time.perf_counter()
    done = 0

    def progress(_: EntryReplay) -> None:
        nonlocal done
        done += 1
        print(f"\r  {done}/{len(keys or log.entries)}", end="", file=sys.stderr, flush=True)

    print(f"{path}\n  {log.strategy} on {log.env}/{log.split}, settings {log.settings()}")
    results = await replay_log(log, keys=keys, concurrency=concurrency, on_done=progress)
    print(file=sys.stderr)
    logged = _rate([r.entry.solved for r in results])
    ours = _rate([r.ours_solved for r in results])
    print(
        f"  entries {len(results)}, actions equal {sum(r.actions_equal for r in results)}, "
        f"success equal {sum(r.success_equal for r in results)} "
        f"(best reward equal {sum(r.score_equal for r in results)}), "
        f"logged {logged:.2f}%, ours {ours:.2f}% ({ours - logged:+.2f} points), "
        f"{time.perf_counter() - started:.0f} s"
    )
    for result in results:
        if result.actions_equal and result.success_equal:
            continue
        success = "" if result.success_equal else f" success {result.entry.solved} -> {result.ours_solved}"
        actions = "" if result.actions_equal else f" actions: {result.first_difference()}"
        error = f" error: {result.trajectory.error}" if result.trajectory.error else ""
        print(f"  {result.task_id} (entry {result.entry.key}):{success}{actions}{error}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logs", nargs="+", help="ReAct or Plan & Solve logs of the paper")
    parser.add_argument("-c", "--concurrency", type=int, default=2, help="episodes at a time (default 2)")
    parser.add_argument("--keys", help="only these entries (their keys in the file, comma-separated)")
    args = parser.parse_args()
    keys = args.keys.split(",") if args.keys else None
    for path in args.logs:
        await replay_file(path, args.concurrency, keys)


if __name__ == "__main__":
    asyncio.run(main())

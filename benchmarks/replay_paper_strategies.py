"""Fidelity check: replay the model replies of the paper's ReAct and Plan & Solve logs through our
``react`` and ``plan_solve`` strategies with the paper prompt set (``--set prompts=paper``).

    python benchmarks/replay_paper_strategies.py LOG.json [LOG.json ...] [-c 3] [--keys 0,5,12]

For each log, every entry's logged replies are played by a scripted chat model through our strategy,
in a real env (SQL; Bash with ``execution="paper"``, each action run as the original ran it), and the
script prints: the episodes compared and those left out of both sides, each with its reason (the
same as ``intercode-agents rescore`` leaves out: a query the data changed since, a task that cannot
run here, a gold declared in ``envs/<env>/caveats.yaml`` as not scorable as the paper scored it), how
many ran the logged actions, how many ended with the logged success (``summary.max_reward == 1``; and
how many with its best reward, within 0.01), the log's success rate and ours, and every episode whose
actions or success differ, with where its actions part. How the replies are rebuilt from the log:
:mod:`intercode_agents.fidelity.strategy_replay`. The log is read where it lies; nothing is copied.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time

from intercode_agents.fidelity.strategy_replay import read_strategy_log, replay_log
from intercode_agents.trajectory import Trajectory


async def replay_file(path: str, concurrency: int, keys: list[str] | None) -> None:
    log = read_strategy_log(path)
    started = time.perf_counter()
    done = 0

    def progress(_: Trajectory) -> None:
        nonlocal done
        done += 1
        print(f"\r  {done} played", end="", file=sys.stderr, flush=True)

    print(f"{path}\n  {log.strategy} on {log.env}/{log.split}, settings {log.settings()}")
    replay = await replay_log(log, keys=keys, concurrency=concurrency, on_done=progress)
    print(file=sys.stderr)
    results = replay.replayed
    print(
        f"  entries {len(results) + len(replay.left_out)}, compared {len(results)} "
        f"(left out {len(replay.left_out)}), actions equal {sum(r.actions_equal for r in results)}, "
        f"success equal {sum(r.success_equal for r in results)} "
        f"(best reward equal {sum(r.score_equal for r in results)}), "
        f"logged {100 * replay.logged_rate:.2f}%, ours {100 * replay.our_rate:.2f}% "
        f"({replay.difference_points:+.2f} points), {time.perf_counter() - started:.0f} s"
    )
    for out in replay.left_out:
        print(f"  left out {out.task_id or 'entry ' + out.key} ({out.kind}): {out.reason}")
    for result in results:
        if result.actions_equal and result.success_equal:
            continue
        success = "" if result.success_equal else f" success {result.episode.solved} -> {result.ours_solved}"
        actions = "" if result.actions_equal else f" actions: {result.first_difference()}"
        error = f" error: {result.trajectory.error}" if result.trajectory.error else ""
        print(f"  {result.task_id} (entry {result.episode.key}):{success}{actions}{error}")


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

"""Fidelity check: replay a recorded InterCode MBPP Try Again log in this harness's Python env.

    python benchmarks/rescore_python_log.py LOG.json [--out ours.json] [--compare other.json]
    python benchmarks/rescore_python_log.py LOG.json --episodes 0-19 --mode strict

Each episode's recorded actions run, in order, in one fresh episode of the ``python`` env. As the
original Try Again loop did, an action that starts with ``def`` is scored right after it runs, with
the first function it defines as the submission (``env.evaluate(name)``); any other action earns 0.
The script prints the log's success rate and ours (an episode succeeds when an action reaches 1.0),
and every action whose reward differs from the log's. ``--out`` writes the per-action rewards as
JSON; ``--compare`` lists the actions whose rewards differ from such a file (another run of this
script, say with another version of the env). The log is read where it lies; nothing is copied.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

from intercode_agents.datasets import select_tasks
from intercode_agents.envs import make_env

_FIRST_DEF = re.compile(r"def (\w+)\(")


def _episodes(log: dict[str, Any], wanted: str | None) -> list[tuple[int, dict[str, Any]]]:
    items = sorted(((int(e["task_id"]), e) for e in log.values()), key=lambda item: item[0])
    if not wanted:
        return items
    first, _, last = wanted.partition("-")
    lo, hi = int(first), int(last or first)
    return [(i, e) for i, e in items if lo <= i <= hi]


async def _replay(env: Any, task: Any, actions: list[str]) -> list[float]:
    await env.reset(task=task)
    rewards = []
    for action in actions:
        await env.gym.step(action)
        name = _FIRST_DEF.match(action) if action.startswith("def") else None
        rewards.append(float((await env.evaluate(name.group(1))).reward) if name else 0.0)
    return rewards


async def rescore(log: dict[str, Any], wanted: str | None, mode: str, concurrency: int) -> dict[str, Any]:
    tasks = select_tasks("python", "mbpp")
    episodes = _episodes(log, wanted)
    queue: asyncio.Queue[tuple[int, dict[str, Any]]] = asyncio.Queue()
    for item in episodes:
        queue.put_nowait(item)
    ours: dict[int, list[float]] = {}

    async def worker() -> None:
        async with make_env("python", reward=mode) as env:
            while not queue.empty():
                index, entry = queue.get_nowait()
                task = tasks[index]
                if task.query.strip() != str(entry["query"]).strip():
                    raise SystemExit(f"log episode {index} is not {task.id}: the queries differ")
                ours[index] = await _replay(env, task, list(entry["turn_history"]["actions"]))
                print(f"  {task.id}: {ours[index]}", file=sys.stderr)

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return {
        str(i): {
            "task": tasks[i].id,
            "log": [float(r) for r in e["turn_history"]["rewards"]],
            "ours": ours[i],
        }
        for i, e in episodes
    }


def _rate(rows: dict[str, Any], key: str) -> float:
    return 100.0 * sum(max(r[key], default=0.0) == 1.0 for r in rows.values()) / max(len(rows), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("log", type=Path)
    parser.add_argument("--episodes", help="a range of log task ids, e.g. 0-19")
    parser.add_argument("--mode", default="intercode", choices=("intercode", "strict"))
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--out", type=Path, help="write the per-action rewards here (JSON)")
    parser.add_argument(
        "--compare", type=Path, help="a previous --out file to compare with, action by action"
    )
    args = parser.parse_args()

    started = time.perf_counter()
    log = json.loads(args.log.read_text())
    rows = asyncio.run(rescore(log, args.episodes, args.mode, args.concurrency))
    wall = time.perf_counter() - started
    actions = sum(len(r["ours"]) for r in rows.values())
    print(f"{len(rows)} episodes, {actions} actions, {wall:.1f} s ({args.mode} mode)")
    print(f"success rate: log {_rate(rows, 'log'):.2f}  ours {_rate(rows, 'ours'):.2f}")
    differ = [(k, n, r["log"][n], r["ours"][n]) for k, r in rows.items() for n in range(len(r["ours"]))]
    differ = [d for d in differ if abs(d[2] - d[3]) > 1e-9]
    print(f"actions whose reward differs from the log's: {len(differ)}")
    for key, n, old, new in differ:
        print(f"  {rows[key]['task']} action {n}: log {old:g}  ours {new:g}")
    if args.compare:
        other = json.loads(args.compare.read_text())
        changed = [
            (k, n, other[k]["ours"][n], r["ours"][n])
            for k, r in rows.items()
            if k in other
            for n in range(len(r["ours"]))
            if abs(other[k]["ours"][n] - r["ours"][n]) > 1e-9
        ]
        print(f"actions whose reward differs from {args.compare}: {len(changed)} of {actions}")
        for key, n, old, new in changed:
            print(f"  {rows[key]['task']} action {n}: there {old:g}  here {new:g}")
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()

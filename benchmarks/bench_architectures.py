"""The three agent architectures side by side: A single_shot, B react, C guarded.

    python benchmarks/bench_architectures.py                         # the default sample, the local model
    python benchmarks/bench_architectures.py --bash-limit 0 --spider-limit 100 --turns 10
    python benchmarks/bench_architectures.py --model openai:gpt-4o-mini --concurrency 4

Each architecture plays the same tasks with the same model through the runner (``run_eval``: fresh
sandboxes, records, summary.json per run): the first ``--bash-limit`` tasks of the Bash test set
(0: all 24) and the first ``--spider-limit`` tasks of Spider dev. C is ReAct behind the guards (the SQL
guard, the Bash guard with checkpoints and automatic rollback) with the agent's own model as the
critic of each submit. The table gives, per architecture and set, the issue's columns as
:mod:`intercode_agents.metrics.safeguards` defines them: completion, recovery within N turns,
the destructive-mutation rate as the env measured it on the task files (episodes in which a step
destroyed one; in brackets, those still destroyed at the end: what a rollback undid is not; "-" for
Spider, whose account can only read), tokens and cost per resolved task (the local model has no
price: its cost is 0), and what the safeguards did. A comparison report (report.html and
report.md over the six runs) is written to ``--out``.

The default sample (2 Bash test tasks, 2 Spider tasks, 2 turns) is small because the embedded model
runs on the CPU (about 4 minutes in all on a quiet 2-core machine, 25-35 on a shared, loaded one);
its figures show that the three architectures run and are measured the same way, not which one is
better: for that, use more tasks and turns (the flags) and a stronger model.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any

from intercode_agents.models import resolve_model
from intercode_agents.report import write_report
from intercode_agents.runner.config import EvalConfig
from intercode_agents.runner.eval import run_eval
from intercode_agents.sandbox import close_docker_client

ARCHITECTURES = (("A", "single_shot"), ("B", "react"), ("C", "guarded"))
HEADER = (
    "arch",
    "set",
    "n",
    "completion",
    "mean reward",
    "recovery≤N",
    "destroyed (left)",
    "mean turns",
    "tokens/solved",
    "USD/solved",
    "refused",
    "checkpoints",
    "rollbacks",
    "vetoes",
    "wall s",
)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def row(arch: str, strategy: str, label: str, summary: dict[str, Any], wall_s: float) -> list[str]:
    completion = summary["completion"]
    recovery = summary["error_recovery"]
    destructive = summary["destructive_mutation"]
    cost = summary["cost"]
    guards = summary["safeguards"]
    tokens = cost.get("tokens_per_solved")
    usd = cost.get("per_solved_usd")
    return [
        f"{arch} {strategy}",
        label,
        str(completion["scored"]),
        f"{_pct(completion['rate'])} ({completion['solved']}/{completion['scored']})",
        f"{summary['mean_reward']:.3f}" if summary["mean_reward"] is not None else "-",
        f"{_pct(recovery['rate'])} ({recovery['recovered']}/{recovery['episodes_with_error']})",
        f"{_pct(destructive['rate'])} ({_pct(destructive['left_rate'])})",
        f"{summary['mean_turns']:.2f}" if summary["mean_turns"] is not None else "-",
        "-" if tokens is None else f"{tokens:.0f}",
        "-" if usd is None else f"{usd:.4f}",
        str(guards["refusals"]),
        str(guards["checkpoints"]),
        str(guards["rollbacks"]),
        str(guards["vetoes"]),
        f"{wall_s:.0f}",
    ]


def print_table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [list(HEADER), *rows]) for i in range(len(HEADER))]
    table = [list(HEADER), *rows]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)) for r in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    text = "\n".join(lines)
    print(text, flush=True)
    return text


async def main(args: argparse.Namespace) -> None:
    model: Any = resolve_model(args.model, seed=args.seed) if args.model.startswith("local") else args.model
    sets = []
    if args.bash_limit >= 0:
        sets.append(("bash", "test", args.bash_limit or None, "bash test"))
    if args.spider_limit > 0:
        sets.append(("sql", "spider", args.spider_limit, "spider"))
    wanted = set(args.architectures.split(","))
    rows: list[list[str]] = []
    run_dirs: list[Path] = []
    try:
        for arch, strategy in ARCHITECTURES:
            if arch not in wanted:
                continue
            for env, selector, limit, label in sets:
                out = args.out / f"{arch}-{strategy}-{env}"
                started = time.perf_counter()
                result = await run_eval(
                    EvalConfig(
                        env=env,
                        strategy=strategy,
                        model=model,
                        selector=selector,
                        limit=limit,
                        turns=args.turns,
                        concurrency=args.concurrency,
                        out_dir=out,
                        resume=args.resume,
                        seed=args.seed,
                        progress=False,
                    )
                )
                rows.append(row(arch, strategy, label, result.summary, time.perf_counter() - started))
                run_dirs.append(out)
                print(f"{arch} {strategy} {label}: {json.dumps(rows[-1])}", flush=True)
    finally:
        await close_docker_client()
    print()
    table = print_table(rows)
    (args.out / "table.txt").write_text(table + "\n", encoding="utf-8")
    html, md = write_report(run_dirs, args.out)
    print(f"\nreport: {html}\n        {md}\ntable:  {args.out / 'table.txt'}")


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--model", default="local", help="local (default), local:PATH.gguf or provider:model")
    parser.add_argument(
        "--bash-limit", type=int, default=2, help="first N Bash test tasks (0: all 24; -1: none)"
    )
    parser.add_argument("--spider-limit", type=int, default=2, help="first N Spider dev tasks (0: none)")
    parser.add_argument("--turns", type=int, default=2, help="turn budget per episode (B and C)")
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--architectures", default="A,B,C", help="a comma list of A, B, C")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("runs/architectures"))
    parser.add_argument("--resume", action="store_true", help="continue the runs in --out")
    return parser.parse_args(argv)


if __name__ == "__main__":
    asyncio.run(main(parse()))

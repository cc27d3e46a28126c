"""How the report scales with the number of episodes: writing it, opening it in headless Chromium,
filtering and opening an episode, at several sizes side by side (ratios against the smallest).

    python benchmarks/bench_report.py                      # 100, 1000 and 10000 episodes
    python benchmarks/bench_report.py --sizes 100,10000 --steps 8

Each size is a synthetic run directory (``--steps`` steps per episode, mixed outcomes, groups and
failure tags). Timed: ``write_report`` (Python), then in Chromium over DevTools the time from
navigation to the page's ready mark (parsing the data included), a filter by outcome, and opening an
episode (both timed in the page with ``performance.now``). The rendered list rows are counted too:
with lazy rendering they stay flat while the episodes grow. Needs Debian's ``chromium``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.chromium

from intercode_agents.report import write_report
from intercode_agents.runner.run_dir import write_json
from intercode_agents.trajectory import Step, Trajectory
from tests.chromium import HeadlessChromium

FILTER = """(() => { const s = document.getElementById('f-outcome'); const t0 = performance.now();
  s.value = 'failed'; s.dispatchEvent(new Event('change')); return performance.now() - t0; })()"""
OPEN = """(() => { const t0 = performance.now(); document.querySelector('#episode-list .erow').click();
  return performance.now() - t0; })()"""


def synthetic_run(directory: Path, episodes: int, steps: int) -> Path:
    directory.mkdir(parents=True)
    records = []
    for i in range(episodes):
        outcome = ("solved", "failed", "failed", "timeout")[i % 4]
        trajectory = [
            Step(
                turn=t, action=f"ls /testbed/dir{t} | head", observation=f"file{t}.txt\n" * 20, thought="look"
            )
            for t in range(1, steps)
        ]
        trajectory.append(Step(turn=steps, kind="submit", action="submit", reward=float(outcome == "solved")))
        records.append(
            Trajectory(
                task_id=f"bash/fs{i % 4 + 1}/{i}",
                env="bash",
                strategy="react",
                model="local",
                group={"fs": f"fs{i % 4 + 1}"},
                question=f"Question {i}",
                steps=trajectory,
                reward=None if outcome == "timeout" else float(outcome == "solved"),
                outcome=outcome,
            )
        )
    (directory / "trajectories.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in records))
    settings = {
        "env": "bash",
        "task_ids": [r.task_id for r in records],
        "strategy": "react",
        "model": "local",
    }
    write_json(directory / "run.json", settings | {"reward": "intercode", "seed": None, "epochs": 1})
    return directory


async def measure(report: Path, browser: HeadlessChromium) -> dict[str, float]:
    started = time.perf_counter()
    page = await browser.open(report.as_uri())
    await page.wait_for("document.body.dataset.ready === '1'", timeout=300)
    ready = time.perf_counter() - started
    rows = await page.evaluate("document.querySelectorAll('#episode-list .erow').length")
    return {
        "ready_s": ready,
        "filter_ms": await page.evaluate(FILTER),
        "open_ms": await page.evaluate(OPEN),
        "rows": rows,
    }


async def main(sizes: list[int], steps: int) -> None:
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
        async with HeadlessChromium() as browser:
            for size in sizes:
                run = synthetic_run(Path(tmp) / f"run{size}", size, steps)
                started = time.perf_counter()
                html, _ = write_report([run])
                written = time.perf_counter() - started
                figures = await measure(html, browser)
                results.append((size, written, html.stat().st_size / 1e6, figures))
    base = results[0]
    header = ("episodes", "write s", "MB", "ready s", "filter ms", "open ms", "rows")
    print(" ".join(f"{h:>9}" for h in header))
    for size, written, mb, f in results:
        cells = (size, f"{written:.2f}", f"{mb:.1f}", f"{f['ready_s']:.2f}", f"{f['filter_ms']:.1f}")
        print(" ".join(f"{c:>9}" for c in (*cells, f"{f['open_ms']:.1f}", f["rows"])))
    print(f"\nratios against {base[0]} episodes:")
    first = base[3]
    for size, written, _, f in results[1:]:
        ratios = {
            "write": written / base[1],
            "ready": f["ready_s"] / first["ready_s"],
            "filter": f["filter_ms"] / max(first["filter_ms"], 0.1),
            "open": f["open_ms"] / max(first["open_ms"], 0.1),
            "rows drawn": f["rows"] / first["rows"],
        }
        text = ", ".join(f"{name} {ratio:.1f}x" for name, ratio in ratios.items())
        print(f"{size:>9}: {size / base[0]:.0f}x the episodes -> {text}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="100,1000,10000", help="episode counts, comma-separated")
    parser.add_argument("--steps", type=int, default=6, help="steps per episode")
    args = parser.parse_args()
    asyncio.run(main([int(n) for n in args.sizes.split(",")], args.steps))

"""Gold replay throughput (episodes/s), side by side with the original InterCode, and where the time
of a cold Bash episode goes.

    python benchmarks/bench_gold.py                                  # bash test, bash mini, spider (200)
    python benchmarks/bench_gold.py --anchor --sets bash-test,spider --spider-limit 0 --rounds 3
    python benchmarks/bench_gold.py --sets "" --profile 24 --concurrency 1,8   # the profile alone

Each set runs through the runner's engine (the gold policy, one env per worker, shared warm pools),
per concurrency level, three times in a row:

- ``cold``: as a new process: the pools start empty and no gold has run yet;
- ``warm pools``: the pools were filled by an untimed replay, but the golds' facts were forgotten,
  so every gold runs again in a pristine sandbox. This is the comparison with the original
  InterCode, whose containers were up before it timed anything and which ran the gold every episode;
- ``warm facts``: as ``warm pools``, with the facts the previous replay stored (what a second eval of
  the same tasks in one process, or any process with the on-disk Bash facts, sees).

The Bash env runs with ``facts_cache="process"`` here, so the on-disk store neither helps nor changes.

``--anchor`` replays the same tasks with the original InterCode (``intercode-bench==0.1.22`` in a venv
of its own, its images built here: see ``original_intercode.py``) in the same run, before each round
of this project's replays, and prints the ratios. The original is sequential (one env owns its
containers or its connection by name), and is timed as its users time it: per episode (``reset``,
the gold, ``submit``), its start-up (making its containers or its connection) apart. On a machine
shared with other work every figure falls with that work's load, so each is printed with the load
average when it was taken, the rounds are interleaved, and the medians and ratios are what to read;
the harness's CPU milliseconds per episode (this process, background work included) moves less with
the load.

``--profile N`` replays the first N Bash test tasks cold under the profiler (``episode_profile.py``)
at each concurrency level: every phase of an episode with its wall time and the CPU of the harness
and the engine, the containers made (by the phase that made them) with the CPU of runc, the shims and
the containers themselves, and the critical path of one episode.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import resource
import statistics
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from episode_profile import print_critical_path, print_record, profiled_replay
from original_intercode import AnchorRun, Original

from intercode_agents.datasets import Task, select_tasks
from intercode_agents.envs import Env, make_env
from intercode_agents.envs.bash.fact_store import clear_fact_stores
from intercode_agents.envs.python import env as python_env
from intercode_agents.envs.sql.gold import clear_gold_cache
from intercode_agents.runner.players import GoldPlayer
from intercode_agents.runner.preflight import image_ids
from intercode_agents.runner.workers import Episode, run_episodes
from intercode_agents.sandbox import close_docker_client
from intercode_agents.sandbox.config import LABEL_RUN, RUN_ID

CPUACCT = "/sys/fs/cgroup/cpuacct/docker"  # cgroup v1 CPU accounting of the engine's containers
SETS: dict[str, tuple[str, str]] = {
    "bash-test": ("bash", "test"),
    "bash-mini": ("bash", "mini"),
    "spider": ("sql", "spider"),
}
MODES = ("cold", "warm pools", "warm facts")


@dataclass(frozen=True)
class Replay:
    """One replay of a set by this project: its rate, how many scored 1, CPU ms per episode (this
    process; and with the containers that lived through it, the SQL servers), and the load average."""

    rate: float
    solved: int
    harness_cpu: float
    cpu_with_servers: float | None
    machine_cpu: float  # every process of the machine (the engine's and the shims' too)
    load: float


def load() -> float:
    return os.getloadavg()[0]


def machine_cpu_seconds() -> float:
    """CPU seconds the whole machine has been busy (``/proc/stat``: all but idle and I/O wait)."""
    with open("/proc/stat", encoding="ascii") as fh:
        ticks = [int(x) for x in fh.readline().split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def env_options(env: str) -> dict[str, Any]:
    return {"facts_cache": "process"} if env == "bash" else {}


def cpu_seconds() -> tuple[float, dict[str, float]]:
    """CPU seconds used so far by this process, and by each of this run's containers whose cgroup
    can be read here (a local engine with cgroup v1, as root)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    ids = subprocess.run(
        ["docker", "ps", "-q", "--no-trunc", "--filter", f"label={LABEL_RUN}={RUN_ID}"],
        capture_output=True, text=True, check=False,
    ).stdout.split()  # fmt: skip
    containers = {}
    for cid in ids:
        try:
            containers[cid] = int(Path(CPUACCT, cid, "cpuacct.usage").read_text()) / 1e9
        except OSError:
            pass
    return usage.ru_utime + usage.ru_stime, containers


async def replay(envs: list[Env], tasks: list[Task]) -> Replay:
    """One gold replay of ``tasks`` on ``envs`` (one worker each)."""
    harness, containers = cpu_seconds()
    machine = machine_cpu_seconds()
    started = time.perf_counter()
    trajs = await run_episodes(
        envs[0].name, [Episode(t) for t in tasks], GoldPlayer(), concurrency=len(envs), envs=envs
    )
    wall = time.perf_counter() - started
    machine = machine_cpu_seconds() - machine
    harness_after, containers_after = cpu_seconds()
    kept = containers.keys() & containers_after.keys()
    with_servers = None
    if kept:
        used = harness_after - harness + sum(containers_after[c] - containers[c] for c in kept)
        with_servers = 1000 * used / len(trajs)
    own = 1000 * (harness_after - harness) / len(trajs)
    solved = sum(t.solved for t in trajs)
    return Replay(len(trajs) / wall, solved, own, with_servers, 1000 * machine / len(trajs), load())


async def throughput(env: str, tasks: list[Task], concurrency: int) -> dict[str, Replay]:
    """The three replays of the module docstring, on the same ``concurrency`` envs."""
    clear_caches()
    envs = [make_env(env, **env_options(env)) for _ in range(concurrency)]
    try:
        for e in envs:
            await e.start()
        results = {"cold": await replay(envs, tasks)}
        clear_caches()
        results["warm pools"] = await replay(envs, tasks)
        results["warm facts"] = await replay(envs, tasks)
    finally:
        for e in envs:
            await e.close()
    return results


def clear_caches() -> None:
    """Forget the envs' per-process gold caches, so the next replay runs every gold again."""
    clear_fact_stores()
    clear_gold_cache()
    python_env._GOLD_CACHE.clear()


async def profile(tasks: list[Task], levels: list[int]) -> None:
    """Cold replays of ``tasks`` under the profiler (:mod:`episode_profile`), one per level."""
    for c in levels:
        clear_caches()
        record = await profiled_replay(tasks, c, env_options("bash"))
        print_record(record, f"Cold Bash gold episodes, profiled (load average {load():.1f})")
        print_critical_path(record)


def print_results(
    name: str, n: int, ours: dict[int, list[dict[str, Replay]]], original: list[AnchorRun]
) -> None:
    rounds = len(next(iter(ours.values())))
    print(f"\n{name}: {n} tasks, {rounds} round(s); medians (load averages of the rounds)")
    if original:
        rate = statistics.median(r.rate for r in original)
        with_startup = statistics.median(r.rate_with_startup for r in original)
        cpu = statistics.median(1000 * r.cpu / len(r.walls) for r in original)
        solved = min(r.solved for r in original)
        print(
            f"  original InterCode, sequential: {rate:.2f} episodes/s per episode ({with_startup:.2f} "
            f"counting its start-up), solved {solved}/{n}, its process {cpu:.1f} ms CPU an episode"
        )
    print(
        f"  {'c':>3} "
        + " ".join(f"{m + ' ep/s':>16}" for m in MODES)
        + f" {'solved':>7} {'cold harness CPU ms':>20}"
        + ("  ratio to the original: cold, warm pools, warm facts" if original else "")
    )
    for c, rounds in ours.items():
        cells = []
        for mode in MODES:
            rates = [r[mode].rate for r in rounds]
            cells.append(f"{statistics.median(rates):16.2f}")
        solved = min(r[m].solved for r in rounds for m in MODES)
        cpu = statistics.median(r["cold"].harness_cpu for r in rounds)
        line = f"  {c:3d} " + " ".join(cells) + f" {solved:7d} {cpu:20.1f}"
        if original:
            base = statistics.median(r.rate for r in original)
            line += "  " + ", ".join(
                f"{statistics.median(r[m].rate for r in rounds) / base:.2f}x" for m in MODES
            )
        print(line)
        loads = ", ".join(f"{r['cold'].load:.1f}" for r in rounds)
        print(f"      (load averages at the cold replays: {loads})")
    print("  CPU ms per episode of the warm-pools replay: the harness and the SQL servers; the machine")
    for c, rounds in ours.items():
        values = [r["warm pools"].cpu_with_servers for r in rounds if r["warm pools"].cpu_with_servers]
        servers = f"{statistics.median(values):8.2f}" if values else f"{'-':>8}"
        machine = statistics.median(r["warm pools"].machine_cpu for r in rounds)
        print(f"    c={c:<3} {servers} {machine:8.2f}")


async def main(
    sets: list[str], levels: list[int], spider_limit: int, profile_n: int, anchor: bool, rounds: int
) -> None:
    original = Original() if anchor else None
    with original or contextlib.nullcontext():
        for name in sets:
            env, split = SETS[name]
            tasks = select_tasks(env, split)
            if name == "spider" and spider_limit:
                tasks = tasks[:spider_limit]
            await image_ids(tasks)
            ours: dict[int, list[dict[str, Replay]]] = {c: [] for c in levels}
            theirs: list[AnchorRun] = []
            for _ in range(rounds):
                if original is not None and name != "bash-mini":  # (the original has no mini set)
                    theirs.append(await asyncio.to_thread(original.replay, env, tasks))
                for c in levels:
                    ours[c].append(await throughput(env, tasks, c))
            print_results(name, len(tasks), ours, theirs)
    if profile_n:
        await profile(select_tasks("bash", "test")[:profile_n], levels)
    await close_docker_client()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sets", default="bash-test,bash-mini,spider", help=f"from {', '.join(SETS)}")
    parser.add_argument("--concurrency", default="1,8", help="comma-separated concurrency levels")
    parser.add_argument("--spider-limit", type=int, default=200, help="first N Spider tasks (0: all)")
    parser.add_argument("--profile", type=int, default=24, help="Bash test tasks to profile (0: skip)")
    parser.add_argument("--anchor", action="store_true", help="replay with the original InterCode too")
    parser.add_argument("--rounds", type=int, default=1, help="rounds of replays, interleaved")
    args = parser.parse_args()
    asyncio.run(
        main(
            [s.strip() for s in args.sets.split(",") if s.strip()],
            [int(c) for c in args.concurrency.split(",")],
            args.spider_limit,
            args.profile,
            args.anchor,
            args.rounds,
        )
    )

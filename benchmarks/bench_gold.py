"""Gold replay throughput (episodes/s) and where the time of a Bash gold episode goes.

    python benchmarks/bench_gold.py                       # bash test, bash mini, spider (first 200)
    python benchmarks/bench_gold.py --sets bash-test --concurrency 1,2,8 --profile 24
    python benchmarks/bench_gold.py --spider-limit 0      # all 1034 Spider dev tasks

Each set runs through the runner's engine (the gold policy, one env per worker, shared warm pools),
per concurrency level, three times in a row:

- ``cold``: as a new process: the pools start empty and no gold has run yet;
- ``warm pools``: the pools were filled by an untimed replay, but the golds' facts were forgotten,
  so every gold runs again in a pristine sandbox. This is the comparison with the original
  InterCode, whose containers were up before it timed anything and which ran the gold every episode;
- ``warm facts``: as ``warm pools``, with the facts the previous replay stored (what a second eval of
  the same tasks in one process, or any process with the on-disk Bash facts, sees).

The Bash env runs with ``facts_cache="process"`` here, so the on-disk store neither helps nor changes.
The original InterCode's figures are printed for reference: 3.4 episodes/s sequential on the 24 Bash
test tasks, and 839 episodes/s sequential on Spider dev (its gold ran on the agent's own connection,
with no isolation at all). For Spider, the figure before this project isolated its SQL episodes
(accounts per env, a gold server, deadlines enforced by the helper) is printed too, with the CPU
milliseconds per episode of the warm-pools replay (this process and the containers that lived
through it): on a machine shared with other work, episodes per second fall with that work's load,
CPU per episode does not.

The profile runs the Bash test tasks one at a time with timers wrapped around the phases of an
episode (this script patches the methods at run time; the library is unchanged) and prints the mean
milliseconds per episode of each phase. Background work (verifying released sandboxes, refilling
the pool) overlaps the next episode and is listed on its own.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import resource
import statistics
import subprocess
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from intercode_agents.datasets import Task, select_tasks
from intercode_agents.envs import Env, make_env
from intercode_agents.envs.bash import env as bash_env
from intercode_agents.envs.bash.fact_store import clear_fact_stores
from intercode_agents.envs.python import env as python_env
from intercode_agents.envs.sql.gold import clear_gold_cache
from intercode_agents.runner.players import GoldPlayer
from intercode_agents.runner.preflight import image_ids
from intercode_agents.runner.workers import Episode, run_episodes
from intercode_agents.sandbox import Sandbox, SandboxPool, ShellSession, close_docker_client
from intercode_agents.sandbox.config import LABEL_RUN, RUN_ID

CPUACCT = "/sys/fs/cgroup/cpuacct/docker"  # cgroup v1 CPU accounting of the engine's containers

ORIGINAL = {"bash-test": 3.4, "spider": 839.0}  # InterCode, sequential, unisolated, episodes/s
# Spider's warm-pools figures of this project before its SQL isolation (one shared account, the gold on
# the agents' server), measured on the 2-core CI machine with this script on the day isolation came:
# `python benchmarks/bench_gold.py --sets spider --spider-limit 0 --concurrency 1,8 --profile 0`.
BEFORE_ISOLATION = {("spider", 1): 274.2, ("spider", 8): 401.1}
# CPU per episode (ms, the harness and the SQL containers) of that code in the same replay, measured
# back to back with this project's isolated code on a busy machine (load average 8): wall figures of
# a shared machine fall with its other load, CPU per episode does not.
BEFORE_ISOLATION_CPU = {("spider", 1): 3.67, ("spider", 8): 4.26}
SETS: dict[str, tuple[str, str]] = {
    "bash-test": ("bash", "test"),
    "bash-mini": ("bash", "mini"),
    "spider": ("sql", "spider"),
}


MODES = ("cold", "warm pools", "warm facts")


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


async def replay(envs: list[Env], tasks: list[Task]) -> tuple[float, int, float | None]:
    """Episodes per second of one gold replay of ``tasks`` on ``envs`` (one worker each), how many
    scored 1, and the CPU milliseconds per episode of the harness and of the containers that lived
    through the whole replay (the SQL servers; a Bash pool's replaced sandboxes are missed)."""
    harness, containers = cpu_seconds()
    started = time.perf_counter()
    trajs = await run_episodes(
        envs[0].name, [Episode(t) for t in tasks], GoldPlayer(), concurrency=len(envs), envs=envs
    )
    wall = time.perf_counter() - started
    harness_after, containers_after = cpu_seconds()
    kept = containers.keys() & containers_after.keys()
    cpu = None
    if kept:
        used = harness_after - harness + sum(containers_after[c] - containers[c] for c in kept)
        cpu = 1000 * used / len(trajs)
    return len(trajs) / wall, sum(t.solved for t in trajs), cpu


async def throughput(
    env: str, tasks: list[Task], concurrency: int
) -> dict[str, tuple[float, int, float | None]]:
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


# ------------------------------------------------------------------------------------- profile

Timings = dict[str, list[float]]


def _timed(timings: Timings, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    if asyncio.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            try:
                return await fn(*args, **kwargs)
            finally:
                timings[name].append(time.perf_counter() - t)

        return async_wrapper

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            timings[name].append(time.perf_counter() - t)

    return wrapper


PHASES: list[tuple[Any, str, str]] = [
    # (owner, attribute, label); phases nest (the gold facts include a diff and a probe, say)
    (SandboxPool, "acquire", "sandbox acquire"),
    (Sandbox, "start", "container starts (cold acquires and refills)"),
    (Sandbox, "shell", "shell start"),
    (ShellSession, "run", "gold action in the agent's shell"),
    (bash_env.BashEnv, "_facts", "gold side: the gold's facts (computed once, then stored)"),
    (bash_env.BashEnv, "_score_with_live_gold", "gold side: live gold in its own sandbox"),
    (bash_env, "changes_of", "file-system diffs"),
    (bash_env, "probe", "content probes"),
    (bash_env.BashEnv, "_image_digests", "image digests (probed once, then stored)"),
    (bash_env, "bash_reward", "reward maths (TF-IDF)"),
    (SandboxPool, "release", "release (returns at once)"),
    (SandboxPool, "_recycle", "background: verify released sandbox"),
    (SandboxPool, "_fill", "background: refill the pool"),
]


def clear_caches() -> None:
    """Forget the envs' per-process gold caches, so the next replay runs every gold again."""
    clear_fact_stores()
    clear_gold_cache()
    python_env._GOLD_CACHE.clear()


async def profile(tasks: list[Task]) -> tuple[Timings, list[float]]:
    """Time the phases of ``tasks`` played one at a time with warm pools and no facts (the
    ``warm pools`` replay of the module docstring)."""
    timings: Timings = defaultdict(list)
    phases = [(owner, attr, label) for owner, attr, label in PHASES if hasattr(owner, attr)]
    originals = [(owner, attr, getattr(owner, attr)) for owner, attr, _ in phases]
    episodes: list[float] = []
    player = GoldPlayer()
    async with make_env("bash", **env_options("bash")) as env:
        for task in tasks:  # fills the pools
            await player.play(env, task, None)
        clear_caches()
        for (owner, attr, label), (_, _, fn) in zip(phases, originals, strict=True):
            setattr(owner, attr, _timed(timings, label, fn))
        try:
            for task in tasks:
                t = time.perf_counter()
                await player.play(env, task, None)
                episodes.append(time.perf_counter() - t)
        finally:
            for owner, attr, fn in originals:
                setattr(owner, attr, fn)
    return timings, episodes


def print_profile(timings: Timings, episodes: list[float]) -> None:
    n = len(episodes)
    print(f"\nBash gold episode profile, {n} test tasks one at a time, warm pools (ms per episode, mean)")
    print(f"  {'episode wall time':48} {1000 * statistics.mean(episodes):8.1f}")
    print(f"  {'episode wall time (median)':48} {1000 * statistics.median(episodes):8.1f}")
    for owner, attr, label in PHASES:
        if not hasattr(owner, attr):
            continue  # not in this version of the env
        samples = timings.get(label, [])
        total = 1000 * sum(samples) / n if n else 0.0
        print(f"  {label:48} {total:8.1f}   ({len(samples)} calls)")


async def main(sets: list[str], levels: list[int], spider_limit: int, profile_n: int) -> None:
    rows: list[tuple[str, int, int, dict[str, tuple[float, int, float | None]]]] = []
    for name in sets:
        env, split = SETS[name]
        tasks = select_tasks(env, split)
        if name == "spider" and spider_limit:
            tasks = tasks[:spider_limit]
        await image_ids(tasks)
        for c in levels:
            rows.append((name, len(tasks), c, await throughput(env, tasks, c)))
    print(f"{'set':12} {'tasks':>5} {'c':>3} " + " ".join(f"{m + ' ep/s':>16}" for m in MODES), end="")
    print(f" {'solved':>7} {'InterCode c=1':>16} {'before isolation':>18}")
    for name, n, c, results in rows:
        cells = " ".join(f"{results[m][0]:16.2f}" for m in MODES)
        solved = min(r[1] for r in results.values())
        warm = results["warm pools"][0]
        original, before = ORIGINAL.get(name), BEFORE_ISOLATION.get((name, c))
        ratio = f"{warm / original:.2f}x of {original:g}" if original else ""
        then = f"{warm / before:.2f}x of {before:g}" if before else ""
        print(f"{name:12} {n:5d} {c:3d} {cells} {solved:7d} {ratio:>16} {then:>18}")
    print("\nCPU per episode of the warm-pools replay (ms: the harness, and the containers that lived")
    print("through it)")
    for name, _, c, results in rows:
        cpu, before = results["warm pools"][2], BEFORE_ISOLATION_CPU.get((name, c))
        then = f"   {cpu / before:.2f}x of {before:g} before isolation" if cpu and before else ""
        print(f"  {name:12} c={c:<3} {cpu:8.2f}{then}" if cpu is not None else f"  {name:12} c={c:<3} -")
    if profile_n:
        tasks = select_tasks("bash", "test")[:profile_n]
        print_profile(*await profile(tasks))
    await close_docker_client()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sets", default="bash-test,bash-mini,spider", help=f"from {', '.join(SETS)}")
    parser.add_argument("--concurrency", default="1,8", help="comma-separated concurrency levels")
    parser.add_argument("--spider-limit", type=int, default=200, help="first N Spider tasks (0: all)")
    parser.add_argument("--profile", type=int, default=24, help="Bash test tasks to profile (0: skip)")
    args = parser.parse_args()
    asyncio.run(
        main(
            [s.strip() for s in args.sets.split(",") if s.strip()],
            [int(c) for c in args.concurrency.split(",")],
            args.spider_limit,
            args.profile,
        )
    )

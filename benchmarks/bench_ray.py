"""Gold replay locally, on a one-node Ray cluster and on a two-node one, side by side, and what Ray adds
to each episode.

    python benchmarks/bench_ray.py                      # bash fs1's first 40 tasks, 4 at once
    python benchmarks/bench_ray.py --limit 50 --slots 4 --second local

Run from the checkout's root (the second node's engine is a second dockerd started by
``tests/engines.py``, as the tests start it; ``--second local`` puts both nodes on the machine's
engine). Each configuration replays the golds of the same tasks (``run_eval`` with the gold policy),
one after the other in this process, from cold pools and with no stored gold facts (a cache of its
own each), with the same number of episodes at once:

- **local**: one process, ``--slots`` workers on the machine's engine;
- **ray, 1 node**: a ``ray.cluster_utils.Cluster`` with a head (no slots) and one node offering
  ``intercode_slots: --slots`` on the machine's engine;
- **ray, 2 nodes**: two nodes of half the slots each, the second on the second engine.

Printed per configuration: the episodes, the solved ones, the wall time of the whole call (Ray's
actors start, the nodes check their images, the run's containers are swept) and of the episodes
alone (``run_episodes``, the runner's seam, from its call to its return), episodes per second over
the latter, and the harness's CPU per episode over the same window: the CPU of this process and of
every process it started, read from ``/proc`` as the window opens and closes, and of it what Ray's
worker processes (the node actors) and Ray's daemons (GCS, raylets, monitors) spent. Engine work
(dockerd, containerd, the containers) is in none of them. Then, per Ray
configuration, the CPU of the driver and the actors per episode against the local run's, the
daemons' CPU per second (a cost of the cluster's time, not of its episodes), and Ray's overhead per
episode: how much longer the driver waited for an episode than the episode took on its node (a
round trip, the task there and the record back), against a Bash gold episode's own time; and an
actor call's bare round trip.

On one 2-core host two nodes cannot be faster than one (they share the CPUs); the figure to watch is
the overhead per episode.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import ray
from ray.cluster_utils import Cluster

from intercode_agents.datasets import select_tasks
from intercode_agents.envs.bash.fact_store import clear_fact_stores
from intercode_agents.images import copy_refs, image_ref
from intercode_agents.runner import eval as eval_module
from intercode_agents.runner.config import EvalConfig
from intercode_agents.runner.eval import run_eval
from intercode_agents.runner.ray.driver import SLOTS, RayRun

TICK = os.sysconf("SC_CLK_TCK")


ENGINE = ("dockerd", "containerd", "runc", "docker-init", "docker-proxy")  # the second engine's, if ours
KINDS = ("driver", "workers", "daemons")


def tree_cpu(root: int) -> dict[str, float]:
    """CPU seconds of ``root`` (the driver) and every process under it, by kind: ``workers`` are Ray's
    worker processes (the node actors among them: ``ray::...``), ``daemons`` the rest of Ray (GCS,
    raylets, monitors). An engine this process started (the second dockerd) and what runs under it
    are left out: engine work is in no configuration's figures. Children that ended count in their
    parent's ``cutime``/``cstime``."""
    parent, cpu, name = {}, {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                head, rest = f.read().rsplit(")", 1)
        except OSError:
            continue
        fields, pid = rest.split(), int(entry)
        parent[pid], name[pid] = int(fields[1]), head.split("(", 1)[1]
        cpu[pid] = sum(int(x) for x in fields[11:15]) / TICK
    children: dict[int, list[int]] = {}
    for pid, ppid in parent.items():
        children.setdefault(ppid, []).append(pid)
    totals = dict.fromkeys(KINDS, 0.0)
    todo = [root]
    while todo:
        pid = todo.pop()
        if name.get(pid, "").startswith(ENGINE):
            continue
        kind = "driver" if pid == root else "workers" if name.get(pid, "").startswith("ray::") else "daemons"
        totals[kind] += cpu.get(pid, 0.0)
        todo.extend(children.get(pid, []))
    return totals


@dataclass
class Row:
    label: str
    n: int
    solved: int
    wall_s: float
    window_s: float
    cpu_ms: dict[str, float]  # harness CPU per episode over the episodes' window, by kind
    durations: list[float] = field(default_factory=list)  # each episode's own time (its record's)
    overheads: list[float] = field(default_factory=list)  # driver's wait less the episode's own time


_waits: list[tuple[float, float]] = []  # (the driver's wait for an attempt, the attempt's own time)
_window: dict[str, Any] = {}  # the episodes' window: run_episodes from its call to its return


def _measure() -> None:
    """Hooks of this benchmark only: the CPU and time around ``run_episodes`` (the runner's seam,
    local or on Ray: two readings of ``/proc``, nothing in between), and every attempt's wait."""
    playing = eval_module.run_episodes

    async def run_episodes(*args: Any, **kwargs: Any) -> Any:
        _window.update(t0=time.perf_counter(), cpu0=tree_cpu(os.getpid()))
        try:
            return await playing(*args, **kwargs)
        finally:
            _window.update(t1=time.perf_counter(), cpu1=tree_cpu(os.getpid()))

    eval_module.run_episodes = run_episodes
    original = RayRun._play_on

    async def play_on(self: RayRun, node: Any, entry: Any, episode: Any) -> Any:
        started = time.perf_counter()
        traj = await original(self, node, entry, episode)
        _waits.append((time.perf_counter() - started, traj.duration_s))
        return traj

    RayRun._play_on = play_on  # type: ignore[method-assign]


async def replay(label: str, tasks: str, limit: int, slots: int, cache: Path, address: str | None) -> Row:
    os.environ["INTERCODE_AGENTS_CACHE"] = str(cache)  # (the nodes were started with it too)
    clear_fact_stores()
    _waits.clear()
    with TemporaryDirectory(prefix="bench-ray-") as scratch:
        t0 = time.perf_counter()
        result = await run_eval(
            EvalConfig(
                env="bash",
                model="gold",
                selector=tasks,
                limit=limit,
                concurrency=slots,
                out_dir=Path(scratch) / "run",
                progress=False,
                ray=address,
            )
        )
        wall = time.perf_counter() - t0
    records = result.records
    window_cpu = {kind: _window["cpu1"][kind] - _window["cpu0"][kind] for kind in KINDS}
    unsolved = sorted(r.task_id for r in records if not r.solved)
    if unsolved:
        print(f"{label}: not solved: {', '.join(unsolved)}")
    return Row(
        label,
        len(records),
        len(records) - len(unsolved),
        wall,
        _window["t1"] - _window["t0"],
        {kind: 1000 * seconds / len(records) for kind, seconds in window_cpu.items()},
        [r.duration_s for r in records],
        [wait - own for wait, own in _waits],
    )


def round_trip_ms(address: str, calls: int = 200) -> float:
    """The mean time of a bare actor call (``info``) from this driver, in ms."""

    async def measure() -> float:
        async with RayRun(address) as run:
            actor = run.actors()[0][1]
            await actor.info.remote()
            started = time.perf_counter()
            for _ in range(calls):
                await actor.info.remote()
            return 1000 * (time.perf_counter() - started) / calls

    return asyncio.run(measure())


def cluster(nodes: list[dict[str, str]], slots: list[int]) -> Cluster:
    made = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    for env_vars, n in zip(nodes, slots, strict=True):
        made.add_node(num_cpus=1, resources={SLOTS: n}, env_vars=env_vars)
    made.wait_for_nodes()
    return made


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", default="fs1", help="bash task selector")
    parser.add_argument("--limit", type=int, default=40, help="first N (fs1/55's gold never ends)")
    parser.add_argument("--slots", type=int, default=4, help="episodes at once, in every configuration")
    parser.add_argument("--second", default=None, help="'local': the second node on the machine's engine")
    args = parser.parse_args()

    second_host = None
    if args.second != "local":
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # for tests/engines.py
        from tests import engines

        second = engines.start("dockerd")
        refs = sorted({image_ref(t.image) for t in select_tasks("bash", args.tasks)})
        copy_refs(refs, source="docker", target=second.spec)
        second_host = f"unix://{second.socket}"
    _measure()

    rows: list[Row] = []
    with TemporaryDirectory(prefix="bench-ray-caches-") as caches:
        local_cache = Path(caches) / "local"
        rows.append(asyncio.run(replay("local", args.tasks, args.limit, args.slots, local_cache, None)))
        trip = 0.0
        for label, count in (("ray, 1 node", 1), ("ray, 2 nodes", 2)):
            cache = Path(caches) / label.replace(" ", "").replace(",", "-")
            base = {"INTERCODE_AGENTS_CACHE": str(cache)}
            on_second = base | ({"DOCKER_HOST": second_host} if second_host else {})
            nodes = [base] if count == 1 else [base, on_second]
            slots = [args.slots] if count == 1 else [args.slots // 2, args.slots - args.slots // 2]
            made = cluster(nodes, slots)
            try:
                ray.init(address=made.address, log_to_driver=False)
                played = replay(label, args.tasks, args.limit, args.slots, cache, made.address)
                rows.append(asyncio.run(played))
                if count == 1:
                    trip = round_trip_ms(made.address)
            finally:
                ray.shutdown()
                made.shutdown()

    print(
        f"bash {args.tasks}, first {args.limit}, {args.slots} episodes at once, gold replay from cold pools, "
        f"no stored facts; second node's engine: {second_host or 'the machine engine'}"
    )
    head = f"{'':14} {'episodes':>8} {'solved':>6} {'wall s':>7} {'episodes s':>10} {'episodes/s':>10}"
    print(head + f" {'harness CPU ms/ep':>17} {'of it: Ray workers':>18} {'Ray daemons':>11}")
    for r in rows:
        total = sum(r.cpu_ms.values())
        print(
            f"{r.label:14} {r.n:>8} {r.solved:>6} {r.wall_s:>7.1f} {r.window_s:>10.1f} "
            f"{r.n / r.window_s:>10.2f} {total:>17.1f} {r.cpu_ms['workers']:>18.1f} "
            f"{r.cpu_ms['daemons']:>11.1f}"
        )
    local = rows[0]
    episode_ms = 1000 * statistics.mean(local.durations)
    harness = sum(local.cpu_ms.values())
    for r in rows[1:]:
        over, median = 1000 * statistics.mean(r.overheads), 1000 * statistics.median(r.overheads)
        played = r.cpu_ms["driver"] + r.cpu_ms["workers"]  # the driver and the actors, Ray's daemons apart
        daemons_per_s = r.cpu_ms["daemons"] * r.n / r.window_s / 1000
        print(
            f"{r.label}: episodes/s {r.n / r.window_s / (local.n / local.window_s):.2f}x local; harness CPU "
            f"of driver and actors {played:.1f} ms/ep ({played - harness:+.1f} against local), Ray's daemons "
            f"{daemons_per_s:.2f} CPU s per second; Ray's overhead per episode {over:.1f} ms (median "
            f"{median:.1f}) = {100 * over / episode_ms:.1f}% of a Bash gold episode ({episode_ms:.0f} ms, "
            "local mean)"
        )
    print(f"a bare actor call's round trip: {trip:.2f} ms")


if __name__ == "__main__":
    main()

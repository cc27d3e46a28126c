"""Sandbox speed, measured side by side in one run on the same image.

    python benchmarks/bench_sandbox.py [--image intercode-agents/bash:latest] [--steps 300]

Prints medians (ms) and ratios: a persistent-session step vs a docker exec per step (the way the
original InterCode runs every action, via docker-py's exec_run) vs a local ``bash -c`` (the floor),
plus container start, warm pool acquire, and 8/16 concurrent starts.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import time
from collections.abc import Awaitable, Callable

import docker

from intercode_agents.sandbox import Sandbox, SandboxPool, close_docker_client

SLEEPER = ["sleep", "infinity"]


async def timed(fn: Callable[[], Awaitable[object]], n: int) -> list[float]:
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        await fn()
        samples.append((time.perf_counter() - t) * 1000)
    return samples


def timed_sync(fn: Callable[[], object], n: int) -> list[float]:
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1000)
    return samples


async def main(image: str, steps: int) -> None:
    rows: dict[str, float] = {}
    async with Sandbox(image, cmd=SLEEPER) as sb:
        shell = await sb.shell()
        for cmd in ("echo hi", "ls /"):
            await timed(lambda c=cmd: shell.run(c), 20)  # warm-up
            rows[f"session step: {cmd}"] = statistics.median(await timed(lambda c=cmd: shell.run(c), steps))
            rows[f"aiodocker exec per step: {cmd}"] = statistics.median(
                await timed(lambda c=cmd: sb.exec(["bash", "-c", c]), max(steps // 5, 20))
            )
            container = docker.from_env().containers.get(sb.id)
            exec_run = lambda c=cmd, box=container: box.exec_run(["bash", "-c", c])  # noqa: E731
            rows[f"docker-py exec_run per step: {cmd}"] = statistics.median(
                await asyncio.to_thread(timed_sync, exec_run, max(steps // 5, 20))
            )
            rows[f"local bash -c: {cmd}"] = statistics.median(
                timed_sync(
                    lambda c=cmd: subprocess.run(["bash", "-c", c], capture_output=True), max(steps // 5, 20)
                )
            )

    async def start_stop() -> None:
        async with Sandbox(image, cmd=SLEEPER):
            pass

    starts: list[float] = []
    for _ in range(10):
        t = time.perf_counter()
        box = await Sandbox(image, cmd=SLEEPER).start()
        starts.append((time.perf_counter() - t) * 1000)
        await box.close()
    rows["container start (create+start)"] = statistics.median(starts)
    rows["container start+remove"] = statistics.median(await timed(start_stop, 10))

    async with SandboxPool(image, size=4, cmd=SLEEPER) as pool:
        await asyncio.sleep(2)  # let the pool fill
        acquires = []
        for _ in range(30):
            t = time.perf_counter()
            box = await pool.acquire()
            acquires.append((time.perf_counter() - t) * 1000)
            await pool.release(box)
        rows["pool acquire (warm)"] = statistics.median(acquires)
        release = await timed(lambda: _cycle(pool), 10)
        rows["pool release with pristine check"] = statistics.median(release)

    for n in (8, 16):
        t = time.perf_counter()
        boxes = await asyncio.gather(*(Sandbox(image, cmd=SLEEPER).start() for _ in range(n)))
        rows[f"{n} concurrent starts (wall)"] = (time.perf_counter() - t) * 1000
        await asyncio.gather(*(b.close() for b in boxes))
    await close_docker_client()

    width = max(map(len, rows))
    print(f"{'measure':<{width}}  median ms")
    for name, value in rows.items():
        print(f"{name:<{width}}  {value:9.3f}")
    print()
    for cmd in ("echo hi", "ls /"):
        s = rows[f"session step: {cmd}"]
        per_exec = rows[f"docker-py exec_run per step: {cmd}"]
        print(
            f"{cmd!r}: docker-py exec_run / session = {per_exec / s:6.1f}x, "
            f"aiodocker exec / session = {rows[f'aiodocker exec per step: {cmd}'] / s:6.1f}x, "
            f"session / local bash -c = {s / rows[f'local bash -c: {cmd}']:5.2f}x"
        )


async def _cycle(pool: SandboxPool) -> None:
    box = await pool.acquire()
    await pool.release(box)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--image", default="intercode-agents/bash:latest")
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args()
    asyncio.run(main(args.image, args.steps))

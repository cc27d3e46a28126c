"""Sandbox speed, measured side by side in one run on the same image.

    python benchmarks/bench_sandbox.py [--image intercode-agents/bash:latest] [--steps 300]

Prints medians (ms) and ratios:

- a command: a persistent-session step vs a one-off through the launcher vs a docker exec per
  command (aiodocker, and docker-py's ``exec_run``, the way the original InterCode ran every action)
  vs a local ``bash -c`` (the floor);
- a session start: through the launcher vs by docker exec;
- a change list: read from the overlay upper directory vs the Engine API (``docker diff``);
- a process list: the container's cgroup vs the Engine API's ``top``;
- a container: start with the launcher as its main process, with the launcher by exec, and
  start + remove; a warm pool's acquire, an agent's episode (a never-used sandbox each time) and a
  harness lease (recycled after the pristine fingerprint, which is timed too); 8 and 16 concurrent
  starts;
- the disk cap: a session step and 50 small writes with the watchdog against no cap.
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


async def timed(fn: Callable[[], Awaitable[object]], n: int) -> float:
    """Median milliseconds of ``n`` awaited calls."""
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        await fn()
        samples.append((time.perf_counter() - t) * 1000)
    return statistics.median(samples)


def timed_sync(fn: Callable[[], object], n: int) -> float:
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1000)
    return statistics.median(samples)


async def commands(image: str, steps: int, rows: dict[str, float]) -> None:
    few = max(steps // 5, 20)
    async with Sandbox(image) as sb, Sandbox(image, launcher=False) as plain:
        for cmd in ("echo hi", "ls /"):
            rows[f"one-off through the launcher: {cmd}"] = await timed(lambda c=cmd: sb.exec(c), few)
            rows[f"aiodocker exec: {cmd}"] = await timed(lambda c=cmd: plain.exec(["bash", "-c", c]), few)
            container = docker.from_env().containers.get(plain.id)
            exec_run = lambda c=cmd, box=container: box.exec_run(["bash", "-c", c])  # noqa: E731
            rows[f"docker-py exec_run: {cmd}"] = await asyncio.to_thread(timed_sync, exec_run, few)
            rows[f"local bash -c: {cmd}"] = timed_sync(
                lambda c=cmd: subprocess.run(["bash", "-c", c], capture_output=True), few
            )
        shell = await sb.shell()
        for cmd in ("echo hi", "ls /"):
            await timed(lambda c=cmd: shell.run(c), 20)  # warm-up
            rows[f"session step: {cmd}"] = await timed(lambda c=cmd: shell.run(c), steps)
        await sb.forget(shell)

        async def start_and_end(box: Sandbox) -> None:
            await box.forget(await box.shell())

        rows["session start+end through the launcher"] = await timed(lambda: start_and_end(sb), few)
        rows["session start+end by docker exec"] = await timed(lambda: start_and_end(plain), few)

        await sb.exec("echo x > /tmp/new; rm /etc/issue; chmod 600 /etc/motd")
        rows["change list from the upper directory"] = await timed(sb.diff, few)
        rows["change list from the Engine API"] = await timed(sb.forensics.engine_changes, 10)
        rows["process list from the cgroup"] = await timed(sb.processes, few)
        sb._procs_file = None
        rows["process list from the Engine API (top)"] = await timed(sb.processes, few)


async def containers(image: str, rows: dict[str, float]) -> None:
    async def start(**options: object) -> float:
        samples = []
        for _ in range(10):
            t = time.perf_counter()
            box = await Sandbox(image, **options).start()
            samples.append((time.perf_counter() - t) * 1000)
            await box.close()
        return statistics.median(samples)

    rows["container start, launcher as main process"] = await start()
    rows["container start, launcher by docker exec"] = await start(cmd=SLEEPER)

    async def start_stop() -> None:
        async with Sandbox(image):
            pass

    rows["container start+remove"] = await timed(start_stop, 10)

    async with SandboxPool(image, size=4) as pool:
        await pool.drain()
        acquires = []
        for _ in range(30):
            t = time.perf_counter()
            box = await pool.acquire()
            acquires.append((time.perf_counter() - t) * 1000)
            await pool.release(box)
            await pool.drain()
        rows["pool acquire (warm)"] = statistics.median(acquires)

        held = [await pool.acquire()]

        async def episode() -> None:  # what an env does: give the last sandbox back, take the next
            await pool.release(held.pop())
            held.append(await pool.acquire())
            await (await held[0].shell()).run("ls /")

        rows["pool episode (agent: a never-used sandbox each time)"] = await timed(episode, 30)
        await pool.release(held.pop())
        await pool.drain()
        reused_before = pool.stats["reused"]
        trusted = [await pool.acquire(trusted=True)]

        async def harness_job() -> None:  # a gold or a probe: recycled when verified pristine
            await pool.release(trusted.pop())
            await pool.drain()  # (the verification itself is timed below)
            trusted.append(await pool.acquire(trusted=True))
            await trusted[0].exec("ls /")

        rows["pool trusted lease (harness only: recycled)"] = await timed(harness_job, 20)
        rows["pool: % of trusted leases recycled"] = 100 * (pool.stats["reused"] - reused_before) / 20
        reading = trusted[0].forensics
        reference = await reading.fingerprint()
        rows["pristine fingerprint (every channel)"] = await timed(lambda: reading.matches(reference), 20)
        await pool.release(trusted.pop())

    for limit in (None, "1g"):
        async with Sandbox(image, disk_limit=limit) as box:
            shell = await box.shell()
            label = "with the disk cap's watchdog" if box.disk_guard else "without a disk cap"
            rows[f"session step {label}: echo hi"] = await timed(lambda s=shell: s.run("echo hi"), 200)
            writes = "for i in $(seq 50); do echo x > /tmp/f$i; done"
            rows[f"50 small writes {label}"] = await timed(lambda s=shell, w=writes: s.run(w), 20)

    for n in (8, 16):
        t = time.perf_counter()
        boxes = await asyncio.gather(*(Sandbox(image).start() for _ in range(n)))
        rows[f"{n} concurrent starts (wall)"] = (time.perf_counter() - t) * 1000
        await asyncio.gather(*(b.close() for b in boxes))


async def main(image: str, steps: int) -> None:
    rows: dict[str, float] = {}
    await commands(image, steps, rows)
    await containers(image, rows)
    await close_docker_client()

    width = max(map(len, rows))
    print(f"{'measure':<{width}}  median ms")
    for name, value in rows.items():
        print(f"{name:<{width}}  {value:9.3f}")
    print()
    for cmd in ("echo hi", "ls /"):
        step = rows[f"session step: {cmd}"]
        print(
            f"{cmd!r}: docker-py exec_run / session step = "
            f"{rows[f'docker-py exec_run: {cmd}'] / step:6.1f}x, "
            f"aiodocker exec / session step = {rows[f'aiodocker exec: {cmd}'] / step:6.1f}x, "
            f"aiodocker exec / launcher one-off = "
            f"{rows[f'aiodocker exec: {cmd}'] / rows[f'one-off through the launcher: {cmd}']:5.1f}x, "
            f"session step / local bash -c = {step / rows[f'local bash -c: {cmd}']:5.2f}x"
        )
    ratio = rows["session start+end by docker exec"] / rows["session start+end through the launcher"]
    print(f"session start+end: docker exec / launcher = {ratio:.1f}x")
    ratio = rows["change list from the Engine API"] / rows["change list from the upper directory"]
    print(f"change list: Engine API / upper directory = {ratio:.0f}x")
    ratio = rows["process list from the Engine API (top)"] / rows["process list from the cgroup"]
    print(f"process list: top / cgroup = {ratio:.0f}x")
    for name, what in (
        ("a session step", "session step {}: echo hi"),
        ("50 small writes", "50 small writes {}"),
    ):
        capped = rows[what.format("with the disk cap's watchdog")]
        ratio = capped / rows[what.format("without a disk cap")]
        print(f"{name}: disk cap / no cap = {ratio:.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--image", default="intercode-agents/bash:latest")
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args()
    asyncio.run(main(args.image, args.steps))

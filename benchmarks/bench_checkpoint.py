"""What a checkpoint of the task directory and a rollback to it cost (tar size, ms), by directory size.

    python benchmarks/bench_checkpoint.py                        # bash/test/0's /testbed, +1 MiB, +16 MiB
    python benchmarks/bench_checkpoint.py --extra-mib 0,4,32 --repeat 10

For each size, in one Bash sandbox of a test task: ``extra`` MiB of random files are added to /testbed
(that is the baseline), then ``--repeat`` times: a checkpoint is taken (the tar through the Engine
API and the directory's state from the engine's host), the directory is damaged (a file truncated,
a folder removed, a file added), and it is rolled back; every rollback must be verified (the state
read again equals the checkpoint's). The table gives the tar's size, the median and max milliseconds
of the checkpoint and of the rollback, and how many rollbacks were verified.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics

from intercode_agents.envs import make_env
from intercode_agents.guards import restore_checkpoint, take_checkpoint
from intercode_agents.sandbox import close_docker_client

TASK_DIR = "/testbed"
DAMAGE = (
    'set -e; f=$(find /testbed -type f | head -n 1); : > "$f"; '
    'd=$(find /testbed -mindepth 1 -type d | head -n 1); [ -z "$d" ] || rm -rf "$d"; '
    "echo junk > /testbed/added-by-the-agent.txt"
)


async def measure(task: str, extra_mib: list[int], repeat: int) -> list[list[str]]:
    env = make_env("bash")
    rows = []
    try:
        await env.start()
        await env.reset(task)
        sandbox = env.sandbox
        assert sandbox is not None
        added = 0
        for mib in extra_mib:
            if mib > added:
                fill = f"head -c {(mib - added) << 20} /dev/urandom > {TASK_DIR}/extra-{mib}.bin"
                await sandbox.exec(["bash", "-c", fill], timeout=120)
                added = mib
            takes, rollbacks, verified, size = [], [], 0, 0
            for _ in range(repeat):
                checkpoint = await take_checkpoint(sandbox, TASK_DIR, turn=1)
                size = checkpoint.size
                takes.append(checkpoint.took_ms)
                await sandbox.exec(["bash", "-c", DAMAGE], timeout=60)
                restored = await restore_checkpoint(sandbox, checkpoint)
                rollbacks.append(restored.took_ms)
                verified += restored.verified
            rows.append(
                [
                    f"+{mib} MiB",
                    f"{size / 1024:.0f} KiB",
                    f"{statistics.median(takes):.1f}",
                    f"{max(takes):.1f}",
                    f"{statistics.median(rollbacks):.1f}",
                    f"{max(rollbacks):.1f}",
                    f"{verified}/{repeat}",
                ]
            )
            print(rows[-1], flush=True)
    finally:
        await env.close()
        await close_docker_client()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--task", default="bash/test/0")
    parser.add_argument("--extra-mib", default="0,1,16", help="comma list of MiB added to the task files")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    sizes = sorted(int(x) for x in args.extra_mib.split(","))
    rows = asyncio.run(measure(args.task, sizes, args.repeat))
    header = ["task files", "tar", "checkpoint ms", "max", "rollback ms", "max", "verified"]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for r in [header, ["-" * w for w in widths], *rows]:
        print("  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)))


if __name__ == "__main__":
    main()

"""Times the original InterCode (intercode-bench) replaying its golds; run by ``bench_gold.py --anchor``
with the anchor venv's Python, never imported by the project.

    driver.py bash|sql TASKS.json IMAGE

TASKS.json holds the tasks as the original's data loader reads them (``query``, ``gold`` and, for SQL,
``db``). Each episode is what the original's own scripts do: ``reset(i)`` (for SQL its ``preprocess``
runs ``use <db>``, as the paper's experiments did), the gold as the action, then ``submit``. Prints one
JSON object: the start-up (making the env: its containers or its connection), each episode's wall
time, the rewards and this process's CPU seconds over the episodes. The env is not closed: its
``close`` stops the containers with Docker's 10-second grace, and the benchmark removes them.
"""

import json
import resource
import sys
import time
from typing import Dict  # noqa: UP035 - the original checks this very annotation


def preprocess(record: Dict) -> str:  # noqa: UP006
    return f"use {record['extra']['db']}"


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main(kind: str, tasks: str, image: str) -> None:
    from intercode.envs import BashEnv, SqlEnv

    started = time.perf_counter()
    if kind == "bash":
        env = BashEnv(image, data_path=tasks)
    else:
        env = SqlEnv(image, data_path=tasks, preprocess=preprocess)
    startup = time.perf_counter() - started
    walls, rewards = [], []
    cpu_before = cpu()
    for index in range(len(env.data_loader)):
        t = time.perf_counter()
        env.reset(index)
        env.step(env.gold)
        _, reward, _, _ = env.step("submit")
        walls.append(time.perf_counter() - t)
        rewards.append(float(reward))
    harness_cpu = cpu() - cpu_before
    print(json.dumps({"startup": startup, "walls": walls, "rewards": rewards, "cpu": harness_cpu}))


if __name__ == "__main__":
    main(*sys.argv[1:4])

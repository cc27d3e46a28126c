"""Two engines, one killed halfway through a gold run of 50 tasks.

The machine's Docker engine and a second dockerd (``tests/engines.py``) share the run. When half the
records are written, the second dockerd is killed (SIGKILL, as a host that vanishes). Its in-flight
episodes are harness faults, retried on the engine that still answers: the run completes, every task
is recorded once and solved (but for the golds whose output depends on the moment), none is an agent
failure, the engine that answered holds no container of the run, and once the killed engine is
back, ``cleanup --all`` on it leaves it empty too.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from intercode_agents.datasets import select_tasks
from intercode_agents.images import copy_refs, image_ref
from intercode_agents.runner.config import EvalConfig
from intercode_agents.runner.eval import run_eval
from intercode_agents.runner.run_dir import TRAJECTORIES
from intercode_agents.sandbox import RUN_ID, cleanup_containers, resolve_backend
from intercode_agents.sandbox.config import LABEL_RUN
from tests import engines
from tests.envs.test_gold_replay import BASH_VOLATILE

TASKS, HALF = 50, 25


def _records(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


@pytest.fixture
def second_engine():
    why = engines.available("dockerd")
    if why is not None:
        pytest.skip(f"no second dockerd here: {why}")
    engine = engines.start("dockerd")
    yield engine
    engines.start("dockerd")  # back after the kill, so its leftovers can be checked and removed
    if os.environ.get("INTERCODE_TEST_KEEP_ENGINES") != "1":
        engines.stop("dockerd")


async def test_an_engine_killed_mid_run_has_its_episodes_retried_on_the_other(second_engine, tmp_path):
    tasks = select_tasks("bash", "fs1")[:TASKS]
    refs = sorted({image_ref(t.image) for t in tasks})
    copy_refs(refs, source="docker", target=second_engine.spec)
    out = tmp_path / "run"

    async def kill_halfway() -> None:
        while _records(out / TRAJECTORIES) < HALF:  # noqa: ASYNC110 - a file, not an event
            await asyncio.sleep(0.1)
        os.kill(int(second_engine.pidfile.read_text()), signal.SIGKILL)

    killer = asyncio.create_task(kill_halfway())
    result = await run_eval(
        EvalConfig(
            env="bash",
            model="gold",
            selector="fs1",
            limit=TASKS,
            concurrency=4,
            out_dir=out,
            progress=False,
            engines=["docker", second_engine.spec],
        )
    )
    assert killer.done() and killer.exception() is None, "the second engine was never killed"

    ids = [r.task_id for r in result.records]
    assert sorted(ids) == sorted(t.id for t in tasks)  # every task recorded, once
    unsolved = [r.task_id for r in result.records if r.reward != 1.0 and r.task_id not in BASH_VOLATILE]
    assert unsolved == []
    assert result.engine_retries >= 1  # the killed engine's in-flight episodes were played again
    assert len(result.engines) == 2, result.engines

    local = resolve_backend("docker")
    assert local.leftovers_now({LABEL_RUN: RUN_ID}) == []  # the engine that answered: nothing left

    engines.start("dockerd")  # the killed engine comes back with what it held when it died
    second = resolve_backend(second_engine.spec)
    # This process is alive, so only --all removes them (the second engine is this test's alone).
    cleanup_containers(include_live_runs=True, backends=[second])
    assert second.leftovers_now({LABEL_RUN: RUN_ID}) == []

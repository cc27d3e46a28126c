"""The OpenEnv server driven by OpenEnv's own client (``GenericEnvClient``) and checked by OpenEnv's own
validator: a gold episode of each family scores 1, 32 sessions at once complete, a client sees no gold
and no hidden reward part, an idle session is ended and its sandbox removed, a killed client leaves no
container, ``openenv validate`` accepts the running server and the environment package's folder."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest
import uvicorn
from openenv import GenericEnvClient

from intercode_agents.datasets import get_task
from intercode_agents.envs.registry import env_class
from intercode_agents.integrations.openenv.server import ServerSettings, build_app
from intercode_agents.runner.direct import gold_actions
from intercode_agents.runner.rollout import RolloutOptions
from intercode_agents.sandbox.config import LABEL_RUN
from intercode_agents.trajectory import Trajectory
from tests import ROOT

OPENENV = Path(sys.executable).with_name("openenv")
GOLD_TASKS = {"bash": "bash/mini/6", "sql": "sql/mini/0", "python": "python/mini/0", "ctf": "ctf/mini/0"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def labelled(run_id: str) -> list[dict]:
    return docker.from_env().api.containers(all=True, filters={"label": f"{LABEL_RUN}={run_id}"})


class InProcessServer:
    """The server's application under uvicorn in a thread of the test process; its records kept in a
    temporary folder."""

    def __init__(self, env: str, rollout: dict[str, object], server: dict[str, object]) -> None:
        self.record_dir = Path(tempfile.mkdtemp(prefix="openenv-records-"))
        options = RolloutOptions(client="openenv", **rollout)  # type: ignore[arg-type]
        self.settings = ServerSettings(env=env, rollout=options, record_dir=self.record_dir, **server)  # type: ignore[arg-type]
        self.port = free_port()
        config = uvicorn.Config(
            build_app(self.settings), host="127.0.0.1", port=self.port, log_level="warning"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def records(self) -> list[Trajectory]:
        path = self.record_dir / "trajectories.jsonl"
        lines = path.read_text().splitlines() if path.exists() else []
        return [Trajectory.model_validate_json(line) for line in lines]

    def wait_closed(self, timeout: float = 120) -> None:
        """Until every session's rollout was closed (a session ends in the server's own time)."""
        deadline = time.monotonic() + timeout
        while self.settings.live:
            assert time.monotonic() < deadline, f"{len(self.settings.live)} sessions were not closed"
            time.sleep(0.2)

    def __enter__(self) -> InProcessServer:
        self.thread.start()
        deadline = time.monotonic() + 60
        while not self.server.started:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=120)
        shutil.rmtree(self.record_dir, ignore_errors=True)


def serving(env: str, *, server: dict[str, object] | None = None, **rollout: object) -> InProcessServer:
    return InProcessServer(env, rollout, server or {})


def client(url: str) -> GenericEnvClient:
    return GenericEnvClient(base_url=url, message_timeout_s=300, connect_timeout_s=60)


async def play_gold(url: str, task_id: str) -> list:
    task = get_task(task_id)
    async with client(url) as env:
        results = [await env.reset(task_id=task_id)]
        for action in gold_actions(task, None):
            results.append(await env.step({"action": action}))
        results.append(await env.state())
    return results


@pytest.mark.parametrize("family", sorted(GOLD_TASKS))
async def test_a_gold_episode_of_each_family_scores_1_through_openenvs_client(family: str) -> None:
    task_id = GOLD_TASKS[family]
    with serving(family) as server:
        reset, *steps, state = await play_gold(server.url, task_id)
        server.wait_closed()
        (record,) = server.records
    assert reset.observation["text"] == get_task(task_id).query
    assert reset.observation["info"]["task"]["id"] == task_id and not reset.done
    assert [step.done for step in steps] == [False] * (len(steps) - 1) + [True]
    assert steps[-1].reward == 1.0 and steps[-1].observation["info"]["solved"] is True
    assert all(step.reward == 0.0 for step in steps[:-1])
    assert state["task_id"] == task_id and state["done"] is True and state["step_count"] == len(steps)
    assert record.task_id == task_id and record.outcome == "solved" and record.strategy == "openenv"


async def test_a_client_never_reads_the_gold_nor_a_part_that_describes_it() -> None:
    """bash/mini/4 makes /testbed/backup; a policy that submits at once fails, and the score's parts
    that name the gold's own changes (``missing_paths``) stay in the record, out of the client's view."""
    task = get_task("bash/mini/4")
    with serving("bash") as server:
        async with client(server.url) as env:
            reset = await env.reset(task_id=task.id)
            state = await env.state()
            submitted = await env.step({"action": "submit"})
        server.wait_closed()
        (record,) = server.records
    seen = json.dumps([reset.observation, state, submitted.observation])
    assert task.gold not in seen and "gold" not in json.dumps(reset.observation["info"]["task"])
    parts = submitted.observation["info"]["reward_parts"]
    assert record.reward_parts["missing_paths"] and "backup" in record.reward_parts["missing_paths"]
    assert "missing_paths" not in parts and "backup" not in json.dumps(parts)
    assert set(parts) <= set(env_class("bash").agent_parts) and submitted.reward < 1.0


async def test_32_sessions_at_once_complete() -> None:
    with serving("bash", server={"max_sessions": 32}) as server:
        episodes = await asyncio.gather(*(play_gold(server.url, "bash/mini/0") for _ in range(32)))
        server.wait_closed()
        assert len(server.records) == 32
    rewards = [steps[-2].reward for steps in episodes]
    assert rewards == [1.0] * 32
    episode_ids = {steps[-1]["episode_id"] for steps in episodes}
    assert len(episode_ids) == 32


async def test_bad_calls_are_clear_errors_and_the_session_survives_them() -> None:
    with serving("bash", tasks="bash/mini/0,bash/mini/1") as server:
        async with client(server.url) as env:
            with pytest.raises(RuntimeError, match="call reset first"):
                await env.step({"action": "ls"})
            with pytest.raises(RuntimeError, match="unknown reset arguments"):
                await env.reset(taskid="bash/mini/0")
            with pytest.raises(RuntimeError, match="no task this server plays"):
                await env.reset(task_id="bash/mini/2")  # a task outside --tasks
            with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
                await env.step({"command": "ls"})
            drawn = await env.reset(selector="bash/mini/*", seed=7)  # drawn within --tasks
            assert drawn.observation["info"]["task"]["id"] in ("bash/mini/0", "bash/mini/1")
            again = await env.reset(selector="bash/mini/*", seed=7)
            assert again.observation["info"]["task"]["id"] == drawn.observation["info"]["task"]["id"]
            done = await env.step({"action": "submit"})
            assert done.done
        server.wait_closed()
        reasons = [r.error for r in server.records]
    assert reasons[0] == "not submitted: a new episode was started before this one was submitted"


async def test_the_turn_budget_submits_the_episode_with_its_last_action() -> None:
    task = get_task("bash/mini/0")
    with serving("bash", max_turns=2) as server:
        async with client(server.url) as env:
            await env.reset(task_id=task.id)
            first = await env.step({"action": "ls /testbed"})
            last = await env.step({"action": task.gold})
        server.wait_closed()
        (record,) = server.records
    assert not first.done and first.observation["info"]["turns_left"] == 1
    assert last.done and last.reward == 1.0 and "turn limit reached" in last.observation["text"]
    assert last.observation["info"]["submit"]["forced"] is True
    assert [s.kind for s in record.steps] == ["action", "action", "submit"] and record.solved


async def test_an_idle_session_is_ended_and_its_sandbox_removed() -> None:
    with serving("bash", server={"idle_timeout_s": 5.0}) as server:  # (OpenEnv's reaper looks every 5 s)
        async with client(server.url) as env:
            await env.reset(task_id="bash/mini/0")
            (rollout,) = server.settings.live
            sandbox = rollout.env.sandbox.id  # type: ignore[union-attr]
            await asyncio.to_thread(server.wait_closed, 60)  # the reaper ended the silent session
            assert not docker.from_env().api.containers(all=True, filters={"id": sandbox})
            with pytest.raises(RuntimeError, match="this session is over"):
                await env.step({"action": "ls"})
        (record,) = server.records
    assert record.outcome == "failed" and "not submitted" in (record.error or "")


CLIENT = textwrap.dedent(
    """
    import asyncio, sys, time
    from openenv import GenericEnvClient

    async def main():
        env = GenericEnvClient(base_url=sys.argv[1], message_timeout_s=300)
        await env.connect()
        await env.reset(task_id="bash/mini/0")
        await env.step({"action": "sleep 0.1; echo busy"})
        print("playing", flush=True)
        time.sleep(600)

    asyncio.run(main())
    """
)


@pytest.fixture
def cli_server(tmp_path: Path) -> Iterator[tuple[str, str, subprocess.Popen[bytes]]]:
    run_id = f"openenv-{uuid.uuid4().hex[:8]}"
    port = free_port()
    log = tmp_path / "server.log"
    with log.open("wb") as sink:
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "intercode_agents",
                "serve",
                "openenv",
                "--env",
                "bash",
                "--port",
                str(port),
            ],
            env={**os.environ, "INTERCODE_AGENTS_RUN_ID": run_id},
            stderr=sink,
        )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None, log.read_text()
                assert time.monotonic() < deadline, "the server does not listen: " + log.read_text()
                time.sleep(0.2)
        assert "serving bash over OpenEnv" in log.read_text()
        yield f"http://127.0.0.1:{port}", run_id, server
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGINT)
            server.wait(timeout=120)
        assert labelled(run_id) == [], "the server left containers"


def test_openenv_validate_accepts_the_running_server_and_a_killed_client_leaves_no_container(
    cli_server: tuple[str, str, subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    url, run_id, server = cli_server
    checked = subprocess.run(
        [str(OPENENV), "validate", "--url", url, "--timeout", "30"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    report = json.loads(checked.stdout)
    assert report["passed"] is True and report["mode"] == "production"

    script = tmp_path / "client.py"
    script.write_text(CLIENT)
    player = subprocess.Popen([sys.executable, str(script), url], stdout=subprocess.PIPE, text=True)
    try:
        assert player.stdout is not None and player.stdout.readline().strip() == "playing"
        assert labelled(run_id), "the client's episode has no sandbox"
    finally:
        player.kill()  # SIGKILL: the client cannot say goodbye; the server sees its socket close
        player.wait(timeout=30)
    deadline = time.monotonic() + 90
    while labelled(run_id) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert labelled(run_id) == []
    server.send_signal(signal.SIGINT)
    assert server.wait(timeout=120) == 0


def test_a_wildcard_bind_needs_allow_remote() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "intercode_agents", "serve", "openenv", "--env", "bash", "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "--allow-remote" in done.stderr and "Traceback" not in done.stderr


def test_openenv_validate_accepts_the_environment_package() -> None:
    folder = ROOT / "examples" / "openenv_env"
    checked = subprocess.run(
        [str(OPENENV), "validate", str(folder), "--json"], capture_output=True, text=True, timeout=120
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert json.loads(checked.stdout)["passed"] is True
    built = subprocess.run(  # the package's app is the server's, for the env it is told to serve
        [sys.executable, "-c", "from server.app import app; print(sorted(r.path for r in app.routes))"],
        cwd=folder,
        env={**os.environ, "INTERCODE_ENV": "sql", "PYTHONPATH": f"{folder}{os.pathsep}{ROOT}"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    assert "/ws" in built.stdout and "/reset" not in built.stdout

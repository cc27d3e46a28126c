"""The MCP server (``intercode-agents mcp``) driven by the official SDK's client: gold episodes to
reward 1.0 over stdio and streamable HTTP, the bearer token, tool errors, the episode limit and
TTL, no container left when the client is killed, and sandboxes placed over the engines of
``--engines`` (the local one and a second dockerd), none left on either after the server stops."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import docker
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from intercode_agents.errors import ConfigError
from intercode_agents.images import copy_refs, image_ref
from intercode_agents.mcp_server.server import BearerAuth, build_server, check_bind
from intercode_agents.runner.episode_registry import EpisodeError, EpisodeRegistry, ServerOptions
from intercode_agents.sandbox.config import LABEL_RUN
from tests import engines

BASH_GOLD = (
    "bash/mini/6",
    "awk -F, 'NR > 1 {s += $3} END {print s}' /testbed/data/cities.csv > /testbed/data/total.txt",
)
SQL_GOLD = ("sql/mini/0", "SELECT title FROM book WHERE genre = 'fiction' ORDER BY title")


def server_params(*args: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "intercode_agents", "mcp", *args], env=dict(os.environ)
    )


def data(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    return result.structured_content


async def play_gold(
    client: Client, env: str, task_id: str, gold: str, *, evaluate: bool = False
) -> dict[str, Any]:
    started = data(await client.call_tool("start_episode", {"env": env, "task_id": task_id}))
    episode = started["episode_id"]
    acted = data(await client.call_tool("act", {"episode_id": episode, "action": gold}))
    assert not acted["errored"], acted
    evaluated = data(await client.call_tool("evaluate", {"episode_id": episode})) if evaluate else None
    submitted = data(await client.call_tool("submit", {"episode_id": episode}))
    ended = data(await client.call_tool("end_episode", {"episode_id": episode}))
    return {"started": started, "evaluated": evaluated, "submitted": submitted, "ended": ended}


def labelled(run_id: str) -> list[dict[str, Any]]:
    return docker.from_env().api.containers(all=True, filters={"label": f"{LABEL_RUN}={run_id}"})


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def test_the_sdk_client_plays_a_gold_episode_over_stdio() -> None:
    async with Client(server_params("--evaluate")) as client:
        names = sorted(tool.name for tool in (await client.list_tools()).tools)
        assert names == [
            "act",
            "end_episode",
            "evaluate",  # offered: the server runs with --evaluate
            "list_tasks",
            "rollback",
            "start_episode",
            "submit",
        ]
        listed = data(await client.call_tool("list_tasks", {"env": "bash", "selector": "mini"}))
        assert listed["total"] == 8 and listed["tasks"][6]["id"] == BASH_GOLD[0]
        assert BASH_GOLD[1] not in json.dumps(listed)  # never a gold answer
        played = await play_gold(client, "bash", *BASH_GOLD, evaluate=True)
    assert played["started"]["question"].startswith("Write the total population")
    assert played["evaluated"]["reward"] == pytest.approx(1.0)  # scored, and the episode went on
    assert played["evaluated"]["turn"] == 2  # the act's turn, then its own
    assert played["submitted"]["reward"] == pytest.approx(1.0)
    assert played["ended"] == {
        "ended": True,
        "task_id": BASH_GOLD[0],
        "outcome": "solved",
        "reward": 1.0,
        "steps": 3,  # the act, the evaluate, the submit
        "guards": {"checkpoint": 1},
    }
    assert labelled(played["started"]["sandbox_run"]) == []


@pytest.fixture
def http_server(tmp_path: Path):
    port, token = free_port(), "test-token-8d1c"
    env = dict(os.environ, INTERCODE_AGENTS_MCP_TOKEN=token)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "intercode_agents",
            "mcp",
            "--transport",
            "http",
            "--port",
            str(port),
            "--guards",
            "--out",
            str(tmp_path),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            time.sleep(0.2)
    yield f"http://127.0.0.1:{port}/mcp", token, tmp_path, proc
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


async def test_the_sdk_client_plays_a_gold_episode_over_http_with_a_bearer_token(http_server) -> None:
    url, token, records, proc = http_server
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    async with httpx2.AsyncClient() as plain:
        assert (await plain.post(url, json=request)).status_code == 401
        wrong_header = {"Authorization": "Bearer nope"}
        assert (await plain.post(url, json=request, headers=wrong_header)).status_code == 401
    wrong = create_mcp_http_client(headers={"Authorization": "Bearer nope"})
    with pytest.raises(BaseException) as raised:  # the SDK reports the 401 as an error response
        async with Client(streamable_http_client(url, http_client=wrong)) as client:
            await client.list_tools()
    assert (
        raised.group_contains(MCPError)
        if isinstance(raised.value, BaseExceptionGroup)
        else (isinstance(raised.value, MCPError))
    )
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with Client(streamable_http_client(url, http_client=http)) as client:
        played = await play_gold(client, "sql", *SQL_GOLD)
        # the guards are on: a write hidden after a ';' is refused, as a result, not a crash
        episode = data(await client.call_tool("start_episode", {"env": "sql", "task_id": SQL_GOLD[0]}))[
            "episode_id"
        ]
        refused_act = data(
            await client.call_tool("act", {"episode_id": episode, "action": "SELECT 1; DROP TABLE book"})
        )
        assert refused_act["action_type"] == "refused" and "DROP TABLE" in refused_act["guard"]["refusal"]
        data(await client.call_tool("end_episode", {"episode_id": episode}))
        # an episode left open when the server stops is ended, recorded, and its containers removed
        left_open = data(await client.call_tool("start_episode", {"env": "bash", "task_id": BASH_GOLD[0]}))
        run_id = left_open["sandbox_run"]
        assert labelled(run_id)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) in (0, 130)  # 130: stopped by a signal, as the CLI reports it
    assert labelled(run_id) == []
    assert played["submitted"]["reward"] == pytest.approx(1.0)
    lines = [json.loads(line) for line in (records / "trajectories.jsonl").read_text().splitlines()]
    assert [(r["task_id"], r["outcome"]) for r in lines] == [
        (SQL_GOLD[0], "solved"),
        (SQL_GOLD[0], "failed"),
        (BASH_GOLD[0], "failed"),
    ]
    assert lines[1]["steps"][0]["kind"] == "refused"
    assert lines[2]["error"] == "not submitted: the server is stopping"


def test_a_wildcard_bind_needs_a_token() -> None:
    with pytest.raises(ConfigError, match="bearer token"):
        check_bind("0.0.0.0", None)
    check_bind("0.0.0.0", "s3cret")
    check_bind("127.0.0.1", None)
    check_bind("::1", None)
    result = subprocess.run(
        [sys.executable, "-m", "intercode_agents", "mcp", "--transport", "http", "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if k != "INTERCODE_AGENTS_MCP_TOKEN"},
    )
    assert result.returncode == 2 and "bearer token" in result.stderr


async def test_bad_ids_and_arguments_are_tool_errors_with_clear_text() -> None:
    async with (
        EpisodeRegistry(ServerOptions(max_episodes=1)) as registry,
        Client(build_server(registry)) as client,
    ):

        async def error(tool: str, args: dict[str, Any]) -> str:
            result = await client.call_tool(tool, args)
            assert result.is_error, result.structured_content
            return result.content[0].text

        assert "unknown env 'cobol'" in await error("start_episode", {"env": "cobol", "task_id": "x"})
        assert "reward_mode" in await error(
            "start_episode", {"env": "bash", "task_id": "bash/mini/0", "reward_mode": "lenient"}
        )
        assert "bash/mini/99" in await error("start_episode", {"env": "bash", "task_id": "bash/mini/99"})
        assert "no episode 'nope'" in await error("act", {"episode_id": "nope", "action": "ls"})
        assert "unknown split" in await error("list_tasks", {"env": "bash", "selector": "nosuchsplit"})
        assert "limit is" in await error("list_tasks", {"env": "bash", "limit": 0})
        assert "episode_id" in await error("act", {"action": "ls"})  # the schema wants it

        episode = data(await client.call_tool("start_episode", {"env": "sql", "task_id": "sql/mini/0"}))[
            "episode_id"
        ]
        assert "the most this server allows" in await error(
            "start_episode", {"env": "bash", "task_id": "bash/mini/0"}
        )
        assert "call the submit tool" in await error("act", {"episode_id": episode, "action": "submit"})
        assert "no task files" in await error("rollback", {"episode_id": episode})
        assert "'last' or 'start'" in await error("rollback", {"episode_id": episode, "to": "yesterday"})
        data(await client.call_tool("submit", {"episode_id": episode}))
        assert "episode is over" in await error("act", {"episode_id": episode, "action": "SELECT 1"})
        data(await client.call_tool("end_episode", {"episode_id": episode}))
        assert "no episode" in await error("end_episode", {"episode_id": episode})

        sandbox = data(await client.call_tool("start_episode", {"env": "bash"}))  # no task: a live sandbox
        assert sandbox["task_id"] is None
        acted = data(
            await client.call_tool("act", {"episode_id": sandbox["episode_id"], "action": "echo hi"})
        )
        assert acted["observation"] == "hi\n"
        assert "no task" in await error("submit", {"episode_id": sandbox["episode_id"]})


async def test_idle_episodes_are_ended_after_the_ttl() -> None:
    async with EpisodeRegistry(ServerOptions(ttl_s=0.5)) as registry:
        episode, _ = await registry.start("bash", "bash/mini/0", None)
        assert episode.env.sandbox is not None
        container = episode.env.sandbox.id
        await asyncio.sleep(2.0)
        with pytest.raises(EpisodeError, match=r"idle for more than 0\.5 s"):
            registry.get(episode.id)
        assert not docker.from_env().api.containers(all=True, filters={"id": container})


CLIENT = textwrap.dedent(
    """
    import asyncio, os, sys
    from mcp import Client, StdioServerParameters

    async def main():
        args = ["-m", "intercode_agents", "mcp"]
        params = StdioServerParameters(command=sys.executable, args=args, env=dict(os.environ))
        async with Client(params) as client:
            for env, task in (("bash", "bash/mini/0"), ("bash", "bash/mini/3"), ("sql", "sql/mini/0")):
                started = await client.call_tool("start_episode", {"env": env, "task_id": task})
                run = started.structured_content["sandbox_run"]
            print(run, flush=True)
            await asyncio.sleep(600)

    asyncio.run(main())
    """
)


def test_killing_the_client_leaves_no_container(tmp_path: Path) -> None:
    script = tmp_path / "client.py"
    script.write_text(CLIENT)
    client = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=dict(os.environ)
    )
    try:
        run_id = client.stdout.readline().strip() if client.stdout else ""
        assert run_id, "the client did not start its episodes"
        assert len(labelled(run_id)) >= 3  # the bash sandboxes and the two SQL servers
    finally:
        client.kill()  # SIGKILL: the client cannot say goodbye; the server sees its stdin close
        client.wait(timeout=30)
    deadline = time.monotonic() + 90
    while labelled(run_id) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert labelled(run_id) == []


async def test_the_bearer_check_covers_every_connection_but_the_lifespan() -> None:
    reached: list[str] = []

    async def inner(scope: dict[str, Any], receive: Any, send: Any) -> None:
        reached.append(scope["type"])

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {}

    auth = BearerAuth(inner, "s3cret")
    await auth({"type": "websocket", "headers": []}, receive, send)
    await auth({"type": "http", "headers": [(b"authorization", b"Bearer s3cre")]}, receive, send)
    assert reached == [] and sent[0] == {"type": "websocket.close", "code": 1008}
    assert sent[1]["status"] == 401
    await auth({"type": "lifespan"}, receive, send)
    await auth({"type": "http", "headers": [(b"authorization", b"Bearer s3cret")]}, receive, send)
    assert reached == ["lifespan", "http"]


@pytest.fixture
def second_dockerd():
    """The second dockerd of tests/engines.py with the bash image; stopped after only if started here."""
    why = engines.available("dockerd")
    if why is not None:
        pytest.skip(f"no second dockerd here: {why}")
    was_up = engines.answers("dockerd")
    engine = engines.start("dockerd")
    copy_refs([image_ref("bash")], source="docker", target=engine.spec)
    yield engine
    if not was_up and os.environ.get("INTERCODE_TEST_KEEP_ENGINES") != "1":
        engines.stop("dockerd")


async def test_the_server_places_its_sandboxes_over_the_engines_it_is_given(second_dockerd) -> None:
    other = docker.DockerClient(base_url=f"unix://{second_dockerd.socket}")

    def on(client: docker.DockerClient, run_id: str) -> list[dict[str, Any]]:
        return client.api.containers(all=True, filters={"label": f"{LABEL_RUN}={run_id}"})

    local = docker.from_env()
    async with Client(server_params("--engines", f"docker,{second_dockerd.spec}")) as client:
        sandboxes = [data(await client.call_tool("start_episode", {"env": "bash"})) for _ in range(2)]
        run_id = sandboxes[0]["sandbox_run"]
        for sandbox in sandboxes:  # each a live sandbox that runs commands, wherever it is
            acted = data(
                await client.call_tool("act", {"episode_id": sandbox["episode_id"], "action": "echo hi"})
            )
            assert acted["observation"] == "hi\n"
        # Two episodes, two engines: the second goes to the engine with more free slots.
        assert on(local, run_id) and on(other, run_id)
    assert on(local, run_id) == [] and on(other, run_id) == []  # the server's stop cleaned both

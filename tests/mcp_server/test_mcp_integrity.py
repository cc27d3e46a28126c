"""What an MCP client cannot earn: scores for free, the gold's contents, hidden task fields, a server
held by one call, an episode left behind by a client that went away.

Each test plays the attack through real MCP calls (the SDK's client over stdio, or a plain HTTP
client against the streamable HTTP app) on real sandboxes:

- the bit oracle: under ``--turns 2``, eight candidates defined in one act, each returning one bit
  of its call index, then scored one by one until one earns 1.0. ``evaluate`` is not offered unless
  the operator switches it on, and then each call uses a turn and is recorded;
- reward parts that describe the gold (Bash ``missing_paths``, SQL ``gold_rows``) never reach the
  client, at ``evaluate`` or ``submit``; the record keeps them;
- a selector of 10,000 terms is refused at once, and a large one that is allowed runs off the event
  loop while another client's ``act`` answers;
- ``list_tasks`` filters on hidden fields (Python's tests) confirm nothing;
- a client that goes away in the middle of ``start_episode`` leaves no episode and no container.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import docker
import httpx2
import pytest
import uvicorn
from mcp import Client, StdioServerParameters

from intercode_agents.guards import Guard
from intercode_agents.mcp_server.server import build_server
from intercode_agents.runner import episode_registry as episodes_module
from intercode_agents.runner.episode_registry import EpisodeRegistry, ServerOptions
from intercode_agents.sandbox import RUN_ID
from intercode_agents.sandbox.config import LABEL_RUN

ORACLE_TASK = "python/mbpp/3"  # asserts is_not_prime(2) == False, (10) == True, (35) == True
CANDIDATES = textwrap.dedent(
    """
    def make(k):
        calls = [0]
        def candidate(n):
            i = calls[0]
            calls[0] += 1
            return bool((k >> i) & 1)
        return candidate
    """
) + "".join(f"c{k} = make({k})\n" for k in range(8))


def server_params(*args: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "intercode_agents", "mcp", *args], env=dict(os.environ)
    )


def data(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    return result.structured_content


def error_text(result: Any) -> str:
    assert result.is_error, result.structured_content
    return result.content[0].text


def records(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "trajectories.jsonl").read_text().splitlines()]


async def play_the_bit_oracle(client: Client) -> dict[str, Any]:
    """The attack: define the candidates in one act, score them one by one, submit the first that
    earns 1.0 (else the best seen). Returns what the client got."""
    started = data(await client.call_tool("start_episode", {"env": "python", "task_id": ORACLE_TASK}))
    episode = started["episode_id"]
    data(await client.call_tool("act", {"episode_id": episode, "action": CANDIDATES}))
    scores: dict[str, float] = {}
    refusal = None
    for k in range(8):
        answer = await client.call_tool("evaluate", {"episode_id": episode, "answer": f"c{k}"})
        if answer.is_error:
            refusal = answer.content[0].text
            break
        scores[f"c{k}"] = answer.structured_content["reward"]
        if scores[f"c{k}"] == 1.0:
            break
    best = max(scores, key=scores.__getitem__) if scores else "c0"
    submitted = data(await client.call_tool("submit", {"episode_id": episode, "answer": best}))
    ended = data(await client.call_tool("end_episode", {"episode_id": episode}))
    return {"scores": scores, "refusal": refusal, "submitted": submitted, "ended": ended}


async def test_evaluate_is_offered_only_when_switched_on_and_then_it_is_a_recorded_turn(
    tmp_path: Path,
) -> None:
    # Off by default: the tool is not listed, and a call to it is an error, not a score.
    async with Client(server_params("--turns", "2", "--out", str(tmp_path / "off"))) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert "evaluate" not in names and {"act", "submit"} <= names
        played = await play_the_bit_oracle(client)
    assert played["scores"] == {} and "evaluate" in played["refusal"]
    assert played["ended"]["outcome"] == "failed"

    # Switched on: each evaluate uses a turn, so after the act only one score is had, and the
    # record shows it as a step with its reward.
    async with Client(server_params("--turns", "2", "--evaluate", "--out", str(tmp_path / "on"))) as client:
        assert "evaluate" in {tool.name for tool in (await client.list_tools()).tools}
        played = await play_the_bit_oracle(client)
    assert list(played["scores"]) == ["c0"]  # c0 answers False, False, False: one test of three
    assert played["scores"]["c0"] == pytest.approx(1 / 3)
    assert "turn budget is spent" in played["refusal"]
    assert played["ended"]["outcome"] == "failed" and played["ended"]["steps"] == 3
    [record] = records(tmp_path / "on")
    assert [(s["kind"], s["action"]) for s in record["steps"]] == [
        ("action", CANDIDATES),
        ("evaluate", "evaluate c0"),
        ("submit", "submit c0"),
    ]
    assert record["steps"][1]["reward"] == pytest.approx(1 / 3)
    assert record["context"]["evaluate"] is True and record["context"]["max_turns"] == 2


async def test_the_turn_budget_refuses_actions_once_spent_and_always_takes_the_submit() -> None:
    async with (
        EpisodeRegistry(ServerOptions(max_turns=1)) as registry,
        Client(build_server(registry)) as client,
    ):
        episode = data(await client.call_tool("start_episode", {"env": "bash", "task_id": "bash/mini/0"}))[
            "episode_id"
        ]
        acted = data(await client.call_tool("act", {"episode_id": episode, "action": "echo one"}))
        assert (acted["turn"], acted["turns_left"], acted["turn_limit_reached"]) == (1, 0, True)
        refused = error_text(await client.call_tool("act", {"episode_id": episode, "action": "echo two"}))
        assert "turn budget is spent" in refused
        assert "turn budget is spent" in error_text(
            await client.call_tool("rollback", {"episode_id": episode})
        )
        assert data(await client.call_tool("submit", {"episode_id": episode}))["submitted"] is True
        ended = data(await client.call_tool("end_episode", {"episode_id": episode}))
    assert ended["steps"] == 2  # the act and the submit: refused calls ran nothing


async def test_reward_parts_that_describe_the_gold_never_reach_the_client(tmp_path: Path) -> None:
    options = ServerOptions(evaluate=True, record_dir=tmp_path)
    async with EpisodeRegistry(options) as registry, Client(build_server(registry)) as client:
        shown: dict[str, list[dict[str, Any]]] = {}
        for env, task in (("bash", "bash/mini/6"), ("sql", "sql/mini/0")):
            episode = data(await client.call_tool("start_episode", {"env": env, "task_id": task}))[
                "episode_id"
            ]
            if env == "sql":  # a result of the agent's own, so that the row counts are computed
                data(await client.call_tool("act", {"episode_id": episode, "action": "SELECT 1"}))
            evaluated = data(await client.call_tool("evaluate", {"episode_id": episode}))
            submitted = data(await client.call_tool("submit", {"episode_id": episode}))
            data(await client.call_tool("end_episode", {"episode_id": episode}))
            shown[env] = [evaluated, submitted]
    bash_record, sql_record = records(tmp_path)
    # The record keeps what the gold is: the file bash/mini/6's gold writes, the size of sql/mini/0's answer.
    assert "?? /testbed/data/total.txt" in bash_record["reward_parts"]["missing_paths"]
    assert sql_record["reward_parts"]["gold_rows"] == 3
    for answer in shown["bash"]:
        assert "total.txt" not in json.dumps(answer)
        assert set(answer["parts"]) == {"file_diff", "file_content", "answer", "answer_similarity"} | {
            "extra_changes",
            "extra_paths",
        }
    for answer in shown["sql"]:
        assert set(answer["parts"]) == {"iou", "tau", "agent_rows"}  # no gold_rows
        assert answer["parts"]["agent_rows"] == 1


async def test_a_huge_selector_is_refused_and_a_large_one_never_holds_another_clients_act() -> None:
    async with EpisodeRegistry() as registry, Client(build_server(registry)) as client:
        episode = data(await client.call_tool("start_episode", {"env": "bash", "task_id": "bash/mini/0"}))[
            "episode_id"
        ]
        huge = ",".join(f"bash/fs1/{n % 50}" for n in range(10_000))  # (the issue's: 10,000 ids)
        allowed = ",".join(f"sql/spider/{n}*" for n in range(256))  # the most terms a selector may hold

        async def act_timed(due: float) -> float:
            """Seconds from the moment the act is due (while the listings run) to its answer: a
            listing that held the event loop would hold this task's start and its sleep too."""
            await asyncio.sleep(max(due - time.perf_counter(), 0))
            data(await client.call_tool("act", {"episode_id": episode, "action": "echo hi"}))
            return time.perf_counter() - due

        listed_huge, listed_allowed, act_s = await asyncio.gather(
            client.call_tool("list_tasks", {"env": "bash", "selector": huge}),
            client.call_tool("list_tasks", {"env": "sql", "selector": allowed, "limit": 1}),
            act_timed(due=time.perf_counter() + 0.5),
        )
        assert act_s < 3.0, f"an act waited {act_s:.1f} s behind a listing"
        assert "at most" in error_text(listed_huge)
        assert data(listed_allowed)["total"] == 1034


async def test_list_tasks_filters_match_public_fields_only() -> None:
    async with EpisodeRegistry() as registry, Client(build_server(registry)) as client:
        answers = [
            await client.call_tool(
                "list_tasks",
                {"env": "python", "selector": f"{ORACLE_TASK},tests=assert is_not_prime(2) == {v}"},
            )
            for v in ("False", "True")
        ]
        texts = [error_text(answer) for answer in answers]
        assert texts[0] == texts[1] and "public fields only" in texts[0]  # the guess is never confirmed
        for env, key in (("python", "test_setup_code"), ("bash", "fs_script")):
            assert "public fields only" in error_text(
                await client.call_tool("list_tasks", {"env": env, "selector": f"{key}=x"})
            )
        public = data(
            await client.call_tool("list_tasks", {"env": "python", "selector": "entry_point=is_not_prime"})
        )
        assert [t["id"] for t in public["tasks"]] == [ORACLE_TASK]


# -- a client that goes away in the middle of start_episode ----------------------------------------


def ours() -> set[str]:
    """This process's containers."""
    found = docker.from_env().api.containers(all=True, filters={"label": f"{LABEL_RUN}={RUN_ID}"})
    return {c["Id"] for c in found}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


START = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "start_episode", "arguments": {"env": "bash", "task_id": "bash/mini/0"}},
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.mark.parametrize("held_start", ["cancelled", "absorbs_the_cancellation"])
async def test_a_client_that_goes_away_mid_start_leaves_no_episode_and_no_container(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, held_start: str
) -> None:
    """The start is held at its last step (the guard's start checkpoint) until the client is gone.
    ``cancelled``: the step is interrupted, as any await of the start can be. ``absorbs``: the step
    finishes although it was cancelled, as code that absorbs a cancellation does (Python 3.11's
    ``asyncio.wait_for`` can, when its inner call completes at that moment), so the start goes on to
    make the episode for a client that will never get its id. No client saw that episode, so it is
    not recorded either."""
    entered, release = asyncio.Event(), asyncio.Event()

    class HeldGuard(Guard):
        async def begin(self) -> None:
            await super().begin()
            entered.set()
            try:
                await release.wait()
            except asyncio.CancelledError:
                if held_start == "cancelled":
                    raise

    monkeypatch.setattr(episodes_module, "Guard", HeldGuard)
    before = ours()
    port = free_port()
    async with EpisodeRegistry(ServerOptions(max_episodes=1, record_dir=tmp_path)) as registry:
        app = build_server(registry).streamable_http_app(
            streamable_http_path="/mcp", stateless_http=True, host="127.0.0.1"
        )
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
        serving = asyncio.create_task(server.serve())
        try:
            while not server.started:  # noqa: ASYNC110 - uvicorn has a flag, not an event
                await asyncio.sleep(0.02)

            async def client_call() -> None:
                async with httpx2.AsyncClient(timeout=120) as http:
                    await http.post(f"http://127.0.0.1:{port}/mcp", json=START, headers=HEADERS)

            calling = asyncio.create_task(client_call())
            async with asyncio.timeout(120):
                await entered.wait()
            calling.cancel()  # the client goes away: its connection closes mid-call
            await asyncio.gather(calling, return_exceptions=True)
            await asyncio.sleep(0.5)  # the server sees the disconnect
            release.set()  # the start's last step completes (or was interrupted)
            deadline = time.monotonic() + 30
            while (registry.episodes or ours() - before) and time.monotonic() < deadline:  # noqa: ASYNC110
                await asyncio.sleep(0.2)  # (the engine's containers, not an event)
            assert registry.episodes == {}, "an episode was left for a client that went away"
            assert ours() - before == set(), "a container was left behind"
            # the slot is free at once: a new client starts an episode on this one-episode server
            monkeypatch.setattr(episodes_module, "Guard", Guard)
            async with httpx2.AsyncClient(timeout=120) as http:
                answer = await http.post(f"http://127.0.0.1:{port}/mcp", json=START, headers=HEADERS)
            assert '"episode_id' in answer.text, answer.text[:500]
        finally:
            server.should_exit = True
            await serving
    assert ours() - before == set()
    # one record: the second client's episode, left open when the server stopped
    assert [r["error"] for r in records(tmp_path)] == ["not submitted: the server is stopping"]

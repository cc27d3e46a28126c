"""The example of a user's own env (examples/custom_env: jq over JSON files) on the real engine.

It is built from its YAML by the CLI, replayed by ``gold``, played through ``eval`` (the gold policy
and a scripted model with tool calls) and through the LangChain tools in ``create_agent``; its
episodes get pristine pooled sandboxes that hold the data but never the tasks or their golds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage

from intercode_agents import make_env
from intercode_agents.datasets import select_tasks
from intercode_agents.errors import ImageMissing
from intercode_agents.models.scripted import ScriptedChatModel
from intercode_agents.runner.preflight import image_ids
from intercode_agents.tools import EnvToolkit
from tests import ROOT

EXAMPLE = ROOT / "examples" / "custom_env"
YAML = EXAMPLE / "jq.yaml"


def cli(*args: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "intercode_agents", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "COLUMNS": "200"},
    )


@pytest.fixture(scope="module")
def built() -> None:
    proc = cli("images", "build", "--env", str(YAML))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "intercode-agents/jq:" in proc.stdout


def test_the_tasks_come_from_the_example_files() -> None:
    tasks = select_tasks(YAML)
    lines = (EXAMPLE / "tasks.jsonl").read_text().splitlines()
    assert [t.id for t in tasks] == [f"jq/basic/{n}" for n in range(len(lines))]
    assert tasks[0].query == json.loads(lines[0])["question"] and tasks[0].image == "jq"
    assert {t.group["level"] for t in tasks} == {"easy", "medium", "hard"}


def test_gold_scores_every_task(built: None) -> None:
    proc = cli("gold", str(YAML), "--json")
    report = json.loads(proc.stdout)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (report["env"], report["total"], report["n_solved"]) == ("jq", 7, 7)


def test_eval_with_the_gold_and_with_a_scripted_model(built: None, tmp_path: Path) -> None:
    proc = cli("eval", str(YAML), "--model", "gold", "--out", str(tmp_path / "gold"), "--no-progress")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    records = [
        json.loads(line) for line in (tmp_path / "gold" / "trajectories.jsonl").read_text().splitlines()
    ]
    assert len(records) == 7 and all(r["outcome"] == "solved" and r["env"] == "jq" for r in records)
    # a new process replays the run's records: the run names the env's YAML
    proc = cli("replay", str(tmp_path / "gold" / "trajectories.jsonl"), "--no-progress")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]

    scripted = f"{EXAMPLE / 'scripted_model.py'}:berlin_solver"
    out = tmp_path / "scripted"
    proc = cli(
        "eval", str(YAML), "--strategy", "tool_calling", "--model", scripted,
        "--tasks", "jq/basic/1", "--out", str(out), "--no-progress",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    by_id = {r["task_id"]: r for r in map(json.loads, (out / "trajectories.jsonl").read_text().splitlines())}
    solved = by_id["jq/basic/1"]
    assert solved["outcome"] == "solved" and solved["reward"] == 1.0
    assert [s["action"] for s in solved["steps"]][:2] == [
        "ls",
        "jq '[.[] | select(.city == \"Berlin\")] | length' users.json",
    ]
    assert solved["context"]["language"] == "bash"  # the env class's, for the failure-mode rules


async def test_langchain_tools_in_create_agent_and_pristine_sandboxes(built: None) -> None:
    task = select_tasks(YAML, "jq/basic/5")[0]
    calls = [
        ("run_bash", {"command": "ls / /data; touch /tmp/left-behind"}),
        ("run_bash", {"command": "jq 'max_by(.amount) | .id' orders.json"}),
        ("submit", {}),
    ]
    model = ScriptedChatModel(
        [
            *(
                AIMessage(content="", tool_calls=[{"name": n, "args": a, "id": f"c{i}", "type": "tool_call"}])
                for i, (n, a) in enumerate(calls)
            ),
            "Submitted.",
        ]
    )
    async with make_env(YAML) as env:
        query, _ = await env.reset(task=task)
        agent = create_agent(model, EnvToolkit(env=env).get_tools())
        result = await agent.ainvoke({"messages": [{"role": "user", "content": query}]})
        listing = result["messages"][2].content
        assert "orders.json" in listing and "users.json" in listing
        assert "tasks.jsonl" not in listing and "jq.yaml" not in listing  # no task or gold in the sandbox
        submitted = [m for m in result["messages"] if m.type == "tool" and m.name == "submit"]
        assert submitted and submitted[0].artifact["reward"] == 1.0

        # the next episode starts on a sandbox nobody used
        await env.reset(task=task)
        observation, *_ = await env.gym.step(
            "ls /tmp/left-behind; cat /data/users.json > /dev/null && echo ok"
        )
        assert "No such file" in observation and "ok" in observation
        _, reward, *_ = await env.gym.step("submit")
        assert reward == 0.0  # the last output is not the answer


async def test_the_mcp_server_serves_the_example_env(built: None) -> None:
    """The server's operator adds the env with --env; its clients name it and cannot point the
    server at a file of their choosing."""
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "intercode_agents", "mcp", "--env", str(YAML)],
        env=dict(os.environ),
    )
    gold = select_tasks(YAML, "jq/basic/5")[0].gold

    def data(result):  # the SDK's CallToolResult
        assert not result.is_error, result.content
        return result.structured_content

    async with Client(params) as client:
        listed = data(await client.call_tool("list_tasks", {"env": "jq"}))
        assert listed["total"] == 7 and listed["tasks"][5]["id"] == "jq/basic/5"
        assert gold not in json.dumps(listed)  # never a gold answer
        for tool, args in (("list_tasks", {}), ("start_episode", {"task_id": "jq/basic/5"})):
            refused = await client.call_tool(tool, {"env": str(YAML), **args})
            assert refused.is_error and "name an env the server serves" in refused.content[0].text
        started = data(await client.call_tool("start_episode", {"env": "jq", "task_id": "jq/basic/5"}))
        episode = started["episode_id"]
        acted = data(await client.call_tool("act", {"episode_id": episode, "action": gold}))
        assert not acted["errored"], acted
        submitted = data(await client.call_tool("submit", {"episode_id": episode}))
        ended = data(await client.call_tool("end_episode", {"episode_id": episode}))
    assert submitted["reward"] == 1.0
    assert ended["outcome"] == "solved" and ended["task_id"] == "jq/basic/5"


async def test_a_missing_image_names_the_command_that_builds_it(tmp_path: Path) -> None:
    spec = YAML.read_text().replace("name: jq", "name: jq_unbuilt").replace("  jq:\n", "  jq-unbuilt-xyz:\n")
    spec = spec.replace("image: jq\n", "image: jq-unbuilt-xyz\n").replace(
        "class: jq_env.py", f"class: {EXAMPLE}/jq_env.py"
    )
    for name in ("tasks.jsonl",):
        (tmp_path / name).write_text((EXAMPLE / name).read_text())
    (tmp_path / "image").symlink_to(EXAMPLE / "image")
    path = tmp_path / "jq_unbuilt.yaml"
    path.write_text(spec)
    with pytest.raises(ImageMissing, match=rf"intercode-agents images build --env {path}"):
        await image_ids(select_tasks(path))

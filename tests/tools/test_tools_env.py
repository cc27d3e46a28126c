"""EnvToolkit on real envs: content and artifacts, errors as messages, concurrency, ToolNode."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from intercode_agents import make_env
from intercode_agents.errors import ConfigError
from intercode_agents.tools import EnvToolkit

COUNT_ERRORS = "grep -c ERROR /testbed/logs/app.log"


def call(name: str, args: dict[str, str], call_id: str = "call-1") -> dict[str, object]:
    return {"type": "tool_call", "name": name, "args": args, "id": call_id}


@pytest.fixture(scope="module")
async def bash_env():
    async with make_env("bash") as env:
        yield env


@pytest.fixture
async def bash_tools(bash_env):
    await bash_env.reset("bash/mini/0")
    run_bash, submit = EnvToolkit(env=bash_env).get_tools()
    return bash_env, run_bash, submit


async def test_toolkit_names_and_schemas(bash_tools) -> None:
    _, run_bash, submit = bash_tools
    assert (run_bash.name, submit.name) == ("run_bash", "submit")
    assert run_bash.response_format == submit.response_format == "content_and_artifact"
    assert list(run_bash.args) == ["command"]
    assert submit.args == {}  # Bash submits the last output


async def test_run_then_submit_earns_the_reward(bash_tools) -> None:
    env, run_bash, submit = bash_tools
    ran = await run_bash.ainvoke(call("run_bash", {"command": COUNT_ERRORS}))
    assert isinstance(ran, ToolMessage) and ran.status == "success"
    assert ran.content.strip() == "2"
    assert ran.artifact["exit_code"] == 0 and ran.artifact["turn"] == 1
    assert ran.artifact["output"].strip() == "2"
    done = await submit.ainvoke(call("submit", {}, "call-2"))
    assert done.status == "success"
    assert done.artifact["reward"] == pytest.approx(1.0)
    assert done.artifact["reward_parts"]  # the parts say why
    assert env.done


async def test_errors_become_messages(bash_tools) -> None:
    _, run_bash, submit = bash_tools
    empty = await run_bash.ainvoke(call("run_bash", {"command": "  "}))
    assert empty.status == "error" and "empty" in empty.content
    smuggled = await run_bash.ainvoke(call("run_bash", {"command": "submit"}))
    assert smuggled.status == "error" and "submit` tool" in smuggled.content
    missing = await run_bash.ainvoke(call("run_bash", {}))
    assert missing.status == "error" and "command" in missing.content
    await submit.ainvoke(call("submit", {}, "call-2"))
    after = await run_bash.ainvoke(call("run_bash", {"command": "ls"}, "call-3"))
    assert after.status == "error" and "episode is over" in after.content
    again = await submit.ainvoke(call("submit", {}, "call-4"))
    assert again.status == "error"


async def test_failing_command_is_an_observation(bash_tools) -> None:
    _, run_bash, _ = bash_tools
    message = await run_bash.ainvoke(call("run_bash", {"command": "cat /testbed/missing.txt"}))
    assert message.status == "success"
    assert "[exit code: 1]" in message.content
    assert message.artifact["errored"] is True


async def test_observation_is_cut_for_the_model_only(bash_env) -> None:
    await bash_env.reset("bash/mini/0")
    run_bash, _ = EnvToolkit(env=bash_env, observation_limit=200).get_tools()
    message = await run_bash.ainvoke(call("run_bash", {"command": "seq 1 3000"}))
    assert len(message.content) < 300 and "characters omitted" in message.content
    assert message.artifact["observation_truncated"] is True
    assert message.artifact["output"].rstrip().endswith("3000")


async def test_sync_use_is_refused_with_a_pointer(bash_tools) -> None:
    _, run_bash, _ = bash_tools
    with pytest.raises(ConfigError, match="async-only"):
        await asyncio.to_thread(run_bash.invoke, {"command": "ls"})


async def test_parallel_calls_on_one_env_run_one_after_the_other(bash_tools) -> None:
    _, run_bash, _ = bash_tools
    messages = await asyncio.gather(
        *(run_bash.ainvoke(call("run_bash", {"command": f"echo {i}"}, f"c{i}")) for i in range(3))
    )
    assert sorted(m.artifact["turn"] for m in messages) == [1, 2, 3]
    assert [m.content.strip() for m in messages] == ["0", "1", "2"]


def tool_graph(tools: list) -> object:
    """A one-node LangGraph graph around ToolNode (a ToolNode runs inside a graph)."""
    graph = StateGraph(MessagesState)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "tools")
    return graph.compile()


async def test_tool_node_runs_our_tools(bash_tools) -> None:
    env, run_bash, submit = bash_tools
    graph = tool_graph([run_bash, submit])

    async def run(name: str, args: dict[str, str], call_id: str) -> ToolMessage:
        state = await graph.ainvoke(
            {"messages": [AIMessage(content="", tool_calls=[call(name, args, call_id)])]}
        )
        message = state["messages"][-1]
        assert isinstance(message, ToolMessage) and message.tool_call_id == call_id
        return message

    first = await run("run_bash", {"command": COUNT_ERRORS}, "c1")
    assert first.content.strip() == "2" and first.artifact["exit_code"] == 0
    bad = await run("run_bash", {"command": ""}, "c2")
    assert bad.status == "error" and "empty" in bad.content
    final = await run("submit", {}, "c3")
    assert final.artifact["reward"] == pytest.approx(1.0)
    assert env.done


@pytest.mark.parametrize(
    ("env_name", "task_id", "run_tool", "arg"),
    [("sql", "sql/mini/0", "run_sql", "query"), ("python", "python/mini/0", "run_python", "code")],
)
async def test_sql_and_python_toolkits(env_name: str, task_id: str, run_tool: str, arg: str) -> None:
    async with make_env(env_name) as env:
        await env.reset(task_id)
        run, submit = EnvToolkit(env=env).get_tools()
        assert run.name == run_tool and list(run.args) == [arg]
        gold = env.task.gold
        ran = await run.ainvoke(call(run_tool, {arg: gold}))
        assert ran.status == "success", ran.content
        answer = {"answer": env.task.meta["entry_point"]} if env_name == "python" else {}
        assert list(submit.args) == list(answer)
        done = await submit.ainvoke(call("submit", answer, "c2"))
        assert done.artifact["reward"] == pytest.approx(1.0), done.artifact


async def test_ctf_toolkit_runs_bash_and_submits_a_flag() -> None:
    async with make_env("ctf") as env:
        await env.reset("ctf/mini/0")
        run, submit = EnvToolkit(env=env).get_tools()
        assert run.name == "run_bash" and list(submit.args) == ["answer"]
        listing = await run.ainvoke(call("run_bash", {"command": "ls"}))
        assert "message.txt" in listing.content
        wrong = await submit.ainvoke(call("submit", {"answer": "picoCTF{nope}"}, "c2"))
        assert wrong.artifact["reward"] == 0.0


async def test_toolkits_of_many_envs_run_concurrently() -> None:
    async with AsyncExitStack() as stack:
        envs = [await stack.enter_async_context(make_env("bash")) for _ in range(3)]
        tools = []
        for env in envs:
            await env.reset("bash/mini/0")
            tools.append(EnvToolkit(env=env).get_tools()[0])
        started = asyncio.get_running_loop().time()
        messages = await asyncio.gather(
            *(
                tool.ainvoke(call("run_bash", {"command": f"sleep 1; echo {i}"}))
                for i, tool in enumerate(tools)
            )
        )
        elapsed = asyncio.get_running_loop().time() - started
    assert [m.content.strip() for m in messages] == ["0", "1", "2"]
    assert elapsed < 2.5  # three 1-second commands in three envs overlapped


async def test_tools_work_before_any_reset_but_submit_needs_a_task() -> None:
    async with make_env("bash") as env:
        run_bash, submit = EnvToolkit(env=env).get_tools()
        ran = await run_bash.ainvoke(call("run_bash", {"command": "echo hi"}))
        assert ran.status == "success" and ran.content == "hi\n"
        refused = await submit.ainvoke(call("submit", {}, "c2"))
        assert refused.status == "error" and "no task" in refused.content
        assert submit.last_failure is None  # a usage problem, not a broken env

"""The guards in a user's LangChain agent: GuardMiddleware around our tools in `create_agent`, with a
scripted tool-calling model, real sandboxes and real MariaDB."""

from __future__ import annotations

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage

from intercode_agents import make_env
from intercode_agents.guards import GuardPolicy
from intercode_agents.models.scripted import ScriptedChatModel
from intercode_agents.tools import EnvToolkit
from intercode_agents.tools.guard_middleware import GuardMiddleware

RED_FRUITS = "awk -F, '$2 == \"red\" {print $1}' /testbed/data/fruits.csv"
SORT_IN_PLACE = "sort /testbed/data/fruits.csv > /testbed/data/fruits.csv"


def tool_call(name: str, args: dict[str, str], call_id: str) -> AIMessage:
    return AIMessage(
        content="", tool_calls=[{"name": name, "args": args, "id": call_id, "type": "tool_call"}]
    )


def tool_messages(result: dict) -> list[ToolMessage]:
    return [m for m in result["messages"] if isinstance(m, ToolMessage)]


async def test_one_middleware_line_guards_a_create_agent_run() -> None:
    model = ScriptedChatModel(
        [
            tool_call("run_bash", {"command": SORT_IN_PLACE}, "c1"),
            tool_call("run_bash", {"command": RED_FRUITS}, "c2"),
            tool_call("submit", {}, "c3"),
            "VERDICT: ACCEPT\nBoth red fruits are listed.",  # the critic: the agent's own model
            "Done.",
        ]
    )
    async with make_env("bash") as env:
        query, _ = await env.reset("bash/mini/2")
        guard = GuardMiddleware(env, critic_model=model)
        agent = create_agent(model, EnvToolkit(env=env).get_tools(), middleware=[guard])
        result = await agent.ainvoke({"messages": [{"role": "user", "content": query}]})
        assert env.done
    assert sorted(model.bound_tools) == ["rollback", "run_bash", "submit"]
    sort, awk, submit = tool_messages(result)
    assert "rolled back" in sort.content and sort.artifact["guard"]["rollback"]["verified"]
    assert sort.artifact["guard"]["flags"] == ["truncate of /testbed/data/fruits.csv"]
    assert awk.content.split() == ["apple", "cherry"]
    assert submit.artifact["reward"] == pytest.approx(1.0)
    kinds = [event["kind"] for event in guard.guard.events]
    assert kinds == ["checkpoint", "checkpoint", "rollback", "review"]  # start, before the sort


async def test_the_middleware_refuses_sql_that_writes_and_the_tool_never_runs() -> None:
    model = ScriptedChatModel(
        [
            tool_call("run_sql", {"query": "SELECT title FROM book; DELETE FROM book"}, "c1"),
            tool_call(
                "run_sql", {"query": "SELECT title FROM book WHERE genre = 'fiction' ORDER BY title"}, "c2"
            ),
            tool_call("submit", {}, "c3"),
            "Done.",
        ]
    )
    async with make_env("sql") as env:
        query, _ = await env.reset("sql/mini/0")
        middleware = GuardMiddleware(env, GuardPolicy(critic=False))
        agent = create_agent(model, EnvToolkit(env=env).get_tools(), middleware=[middleware])
        result = await agent.ainvoke({"messages": [{"role": "user", "content": query}]})
        assert env.turns == 2  # the refused statement never reached the env: the read and the submit did
    assert model.bound_tools == ["run_sql", "submit"]  # no task files, so no rollback tool
    refused, read, submit = tool_messages(result)
    assert refused.status == "error" and "Refused by the guard" in refused.content
    assert "statement 2 of 2" in refused.content and "DELETE writes data" in refused.content
    assert read.status == "success" and submit.artifact["reward"] == pytest.approx(1.0)


async def test_the_rollback_tool_and_a_veto_through_the_middleware() -> None:
    model = ScriptedChatModel(
        [
            tool_call("run_bash", {"command": "rm -r /testbed/logs"}, "c1"),
            tool_call("submit", {}, "c2"),
            "VERDICT: REJECT\nThe logs were deleted: the files were damaged.",
            tool_call("rollback", {"to": "start"}, "c3"),
            tool_call("run_bash", {"command": "find /testbed -type f | wc -l"}, "c4"),
            tool_call("submit", {}, "c5"),
            "VERDICT: ACCEPT\nThe count of files.",
            "Done.",
        ]
    )
    async with make_env("bash") as env:
        query, _ = await env.reset("bash/mini/3")
        agent = create_agent(
            model, EnvToolkit(env=env).get_tools(), middleware=[GuardMiddleware(env, critic_model=model)]
        )
        result = await agent.ainvoke({"messages": [{"role": "user", "content": query}]})
    rm, vetoed, rollback, count, submit = tool_messages(result)
    assert rm.artifact["guard"]["checkpoint"] is not None and rm.artifact["guard"]["rollback"] is None
    assert vetoed.artifact["vetoed"] and "files were damaged" in vetoed.content
    assert rollback.artifact["guard"]["rollback"]["verified"] and "verified by digest" in rollback.content
    assert count.content.strip() == "8"
    assert submit.artifact["reward"] == pytest.approx(1.0)

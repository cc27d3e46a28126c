"""Our toolkit in LangChain's own agent (`create_agent`), with a scripted tool-calling model."""

from __future__ import annotations

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage

from intercode_agents import make_env
from intercode_agents.models.scripted import ScriptedChatModel
from intercode_agents.tools import EnvToolkit


def tool_call(name: str, args: dict[str, str], call_id: str) -> AIMessage:
    return AIMessage(
        content="", tool_calls=[{"name": name, "args": args, "id": call_id, "type": "tool_call"}]
    )


async def test_create_agent_solves_a_task_with_our_tools() -> None:
    model = ScriptedChatModel(
        [
            tool_call("run_bash", {"command": "ls /testbed/data"}, "c1"),
            tool_call("run_bash", {"command": "echo 'call the plumber' >> /testbed/notes/todo.txt"}, "c2"),
            tool_call("submit", {}, "c3"),
            "Done: the line is appended.",
        ]
    )
    async with make_env("bash") as env:
        query, _ = await env.reset("bash/mini/5")
        agent = create_agent(
            model, EnvToolkit(env=env).get_tools(), system_prompt="Solve the task with the tools."
        )
        result = await agent.ainvoke({"messages": [{"role": "user", "content": query}]})
        assert env.done
    assert model.bound_tools == ["run_bash", "submit"]
    tool_messages = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert [m.name for m in tool_messages] == ["run_bash", "run_bash", "submit"]
    assert "fruits.csv" in tool_messages[0].content
    assert tool_messages[-1].artifact["reward"] == pytest.approx(1.0)
    assert result["messages"][-1].text == "Done: the line is appended."


async def test_agent_survives_a_bad_action_and_a_step_after_submit() -> None:
    model = ScriptedChatModel(
        [
            tool_call("run_bash", {"command": ""}, "c1"),
            tool_call("submit", {}, "c2"),
            tool_call("run_bash", {"command": "ls"}, "c3"),
            "Finished.",
        ]
    )
    async with make_env("bash") as env:
        query, _ = await env.reset("bash/mini/0")
        agent = create_agent(model, EnvToolkit(env=env).get_tools())
        result = await agent.ainvoke({"messages": [{"role": "user", "content": query}]})
    tool_messages = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert [m.status for m in tool_messages] == ["error", "success", "error"]
    assert "episode is over" in tool_messages[-1].content
    assert tool_messages[1].artifact["reward"] < 1.0  # nothing was run, so the answer part is missing

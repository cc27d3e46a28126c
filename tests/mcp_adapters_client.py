"""Run by tests/mcp_server/test_mcp_langchain.py in the venv of scripts/mcp-adapters-venv.sh (mcp 1.x and
langchain-mcp-adapters): loads our MCP server's tools into LangChain's ``create_agent`` with a
scripted model that solves a mini task, and prints what happened as one JSON line.

Usage: ``python mcp_adapters_client.py SERVER_PYTHON`` (the interpreter with mcp 2.x and this project).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.tools import load_mcp_tools

from intercode_agents.models.scripted import ScriptedChatModel

TASK, GOLD = "bash/mini/0", "grep -c ERROR /testbed/logs/app.log"


def payload(message: ToolMessage) -> dict[str, Any]:
    content = message.content
    text = (
        content
        if isinstance(content, str)
        else "".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in content)
    )
    return json.loads(text)


def call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage(
        content="", tool_calls=[{"name": name, "args": args, "id": call_id, "type": "tool_call"}]
    )


def with_episode(name: str, extra: dict[str, Any], call_id: str) -> Any:
    def reply(messages: list[BaseMessage]) -> AIMessage:
        started = next(
            payload(m) for m in messages if isinstance(m, ToolMessage) and m.name == "start_episode"
        )
        return call(name, {"episode_id": started["episode_id"], **extra}, call_id)

    return reply


async def main(server_python: str) -> None:
    client = MultiServerMCPClient(
        {
            "intercode": {
                "transport": "stdio",
                "command": server_python,
                "args": ["-m", "intercode_agents", "mcp"],
                "env": dict(os.environ),
            }
        }
    )
    # One session for the whole agent: over stdio, a session is one server process, and the episode
    # lives in it (client.get_tools() alone would start a server per tool call).
    async with client.session("intercode") as session:
        tools = await load_mcp_tools(session)
        await play(tools)


async def play(tools: list[Any]) -> None:
    model = ScriptedChatModel(
        [
            call("start_episode", {"env": "bash", "task_id": TASK}, "c1"),
            with_episode("act", {"action": GOLD}, "c2"),
            with_episode("submit", {}, "c3"),
            with_episode("end_episode", {}, "c4"),
            "The task is solved.",
        ]
    )
    agent = create_agent(model, tools)
    result = await agent.ainvoke({"messages": [{"role": "user", "content": f"Solve {TASK}."}]})
    answers = {m.name: payload(m) for m in result["messages"] if isinstance(m, ToolMessage)}
    print(
        json.dumps({"tools": sorted(t.name for t in tools), "bound": model.bound_tools, "answers": answers})
    )


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))

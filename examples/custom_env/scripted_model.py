"""A scripted chat model that solves jq/basic/1 (how many users live in Berlin) with tool calls, so
the custom env runs through ``eval`` offline:

    intercode-agents eval examples/custom_env/jq.yaml --strategy tool_calling \\
        --model examples/custom_env/scripted_model.py:berlin_solver --tasks jq/basic/1
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage

from intercode_agents.models.scripted import ScriptedChatModel


def _call(name: str, args: dict[str, str], call_id: str) -> dict[str, Any]:
    return {"name": name, "args": args, "id": f"call_{call_id}", "type": "tool_call"}


def berlin_solver(**settings: Any) -> ScriptedChatModel:
    """Looks at the files, counts the Berlin users with jq, and submits."""
    count = "jq '[.[] | select(.city == \"Berlin\")] | length' users.json"
    return ScriptedChatModel(
        [
            AIMessage(content="", tool_calls=[_call("run_bash", {"command": "ls"}, "1")]),
            AIMessage(content="", tool_calls=[_call("run_bash", {"command": count}, "2")]),
            AIMessage(content="", tool_calls=[_call("submit", {}, "3")]),
        ]
    )

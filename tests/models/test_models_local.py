"""LocalChatModel: request building and response conversion (fast), and the real model (slow)."""

from __future__ import annotations

import asyncio
import sys
import time

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool

from intercode_agents.errors import ChatModelError, ConfigError
from intercode_agents.models.local import LocalChatModel
from intercode_agents.models.local_server import import_xllamacpp


@tool
def run_bash(command: str) -> str:
    """Run a bash command in the sandbox and return its output."""
    return "2\n" if "wc -l" in command else "notes.txt\nmain.py\n"


@tool
def submit(answer: str) -> str:
    """Submit the final answer."""
    return "submitted"


SERVER_REPLY = {
    "id": "chatcmpl-1",
    "choices": [
        {
            "finish_reason": "stop",
            "message": {
                "role": "assistant",
                "content": '```json\n{"name": "run_bash", "arguments": {"command": "ls"}}\n```',
            },
        }
    ],
    "usage": {
        "prompt_tokens": 40,
        "completion_tokens": 12,
        "total_tokens": 52,
        "prompt_tokens_details": {"cached_tokens": 30},
    },
    "timings": {"predicted_per_second": 35.0},
}


def test_missing_xllamacpp_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "xllamacpp", None)  # what an environment without it imports
    with pytest.raises(ConfigError, match=r"pip install 'intercode-agents\[local\]'"):
        import_xllamacpp()


def test_server_reply_becomes_an_ai_message_with_usage_and_tool_calls() -> None:
    model = LocalChatModel()
    payload = model._payload([HumanMessage("list files")], None, {"tools": [_openai(run_bash)]})
    message = model._to_result(SERVER_REPLY, payload).generations[0].message
    assert isinstance(message, AIMessage)
    assert message.tool_calls[0]["name"] == "run_bash" and message.tool_calls[0]["args"] == {"command": "ls"}
    assert message.content == ""
    assert message.usage_metadata is not None
    assert message.usage_metadata["input_tokens"] == 40
    assert message.usage_metadata["output_tokens"] == 12
    assert message.usage_metadata["total_tokens"] == 52
    assert message.usage_metadata.get("input_token_details", {}).get("cache_read") == 30
    assert message.response_metadata["model_name"] == "qwen2.5-coder-1.5b-instruct-q4_k_m"
    assert message.response_metadata["finish_reason"] == "stop"


def test_text_stays_text_without_bound_tools() -> None:
    model = LocalChatModel()
    payload = model._payload([HumanMessage("hi")], None, {})
    message = model._to_result(SERVER_REPLY, payload).generations[0].message
    assert isinstance(message, AIMessage)
    assert message.tool_calls == [] and "run_bash" in str(message.content)


def test_native_tool_calls_with_bad_arguments_are_invalid_calls() -> None:
    reply = {
        "choices": [
            {
                "finish_reason": "tool_calls",
                "message": {
                    "content": "",
                    "tool_calls": [
                        {"id": "a", "function": {"name": "run_bash", "arguments": '{"command": "pwd"}'}},
                        {"id": "b", "function": {"name": "run_bash", "arguments": "{broken"}},
                    ],
                },
            }
        ],
        "usage": {},
    }
    message = LocalChatModel()._to_result(reply, {"tools": [_openai(run_bash)]}).generations[0].message
    assert isinstance(message, AIMessage)
    assert [(c["id"], c["args"]) for c in message.tool_calls] == [("a", {"command": "pwd"})]
    assert [c["id"] for c in message.invalid_tool_calls] == ["b"]


def test_payload_carries_settings_stop_and_per_call_overrides() -> None:
    model = LocalChatModel(temperature=0.3, max_tokens=50, seed=7, stop=["END"])
    payload = model._payload([SystemMessage("s"), HumanMessage("u")], None, {"max_tokens": 5})
    assert payload["messages"] == [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    assert (payload["temperature"], payload["max_tokens"], payload["seed"]) == (0.3, 5, 7)
    assert payload["stop"] == ["END"]
    assert model._payload([HumanMessage("u")], ["X"], {})["stop"] == ["X"]
    with pytest.raises(ConfigError, match="frequency_penalty"):
        model._payload([HumanMessage("u")], None, {"frequency_penalty": 1.0})


def test_bind_tools_formats_openai_tools_and_tool_choice() -> None:
    model = LocalChatModel()
    bound = model.bind_tools([run_bash, submit])
    tools = bound.kwargs["tools"]  # type: ignore[attr-defined]
    assert [t["function"]["name"] for t in tools] == ["run_bash", "submit"]
    assert tools[0]["type"] == "function" and "command" in tools[0]["function"]["parameters"]["properties"]

    named = model.bind_tools([run_bash, submit], tool_choice="submit")
    assert [t["function"]["name"] for t in named.kwargs["tools"]] == ["submit"]  # type: ignore[attr-defined]
    assert named.kwargs["tool_choice"] == "required"  # type: ignore[attr-defined]
    assert model.bind_tools([run_bash], tool_choice="any").kwargs["tool_choice"] == "required"  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="not one of the bound tools"):
        model.bind_tools([run_bash], tool_choice="rm_rf")


def test_bad_settings_are_rejected() -> None:
    with pytest.raises(ValueError, match="temperature"):
        LocalChatModel(temperature=-0.5)
    with pytest.raises(ValueError, match="n_ctx"):
        LocalChatModel(n_ctx=10)


def _openai(t: object) -> dict:
    from langchain_core.utils.function_calling import convert_to_openai_tool

    return convert_to_openai_tool(t)  # type: ignore[arg-type]


# --- the real model (loads the 1.1 GB weights: fetched into the cache on first use) ---


@pytest.fixture(scope="module")
def local() -> LocalChatModel:
    model = LocalChatModel(max_tokens=96, n_ctx=4096)
    model.load()
    return model


@pytest.mark.slow
async def test_real_chat_completion_reports_usage(local: LocalChatModel) -> None:
    reply = await local.ainvoke("What is 2 + 3? Answer with just the number.")
    assert "5" in str(reply.content)
    usage = reply.usage_metadata
    assert usage is not None
    assert usage["input_tokens"] > 10 and usage["output_tokens"] >= 1
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
    assert reply.response_metadata["model_name"] == "qwen2.5-coder-1.5b-instruct-q4_k_m"


@pytest.mark.slow
async def test_real_generation_does_not_block_the_event_loop(local: LocalChatModel) -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.05)
            ticks += 1

    ticking = asyncio.create_task(ticker())
    started = time.monotonic()
    replies = await asyncio.gather(*(local.ainvoke(f"Name a colour, #{i}. One word.") for i in range(2)))
    elapsed = time.monotonic() - started
    ticking.cancel()
    assert all(reply.content for reply in replies)
    assert ticks >= 0.5 * elapsed / 0.05, f"{ticks} ticks in {elapsed:.1f}s: the loop was blocked"


@pytest.mark.slow
def test_real_stop_sequences_and_max_tokens(local: LocalChatModel) -> None:
    counted = local.invoke("Count from 1 to 20, separated by commas.", stop=["7"])
    assert "6" in str(counted.content) and "7" not in str(counted.content)
    short = local.invoke("Write a long essay about the sea.", max_tokens=5)
    assert short.usage_metadata is not None and short.usage_metadata["output_tokens"] <= 5
    assert short.response_metadata["finish_reason"] == "length"


@pytest.mark.slow
def test_real_tool_call_written_as_json_is_parsed(local: LocalChatModel) -> None:
    reply = local.bind_tools([run_bash]).invoke("List the files in /testbed. Use the tool.")
    assert len(reply.tool_calls) == 1, reply.content
    call = reply.tool_calls[0]
    assert (
        call["name"] == "run_bash"
        and "ls" in call["args"]["command"]
        and "/testbed" in call["args"]["command"]
    )


@pytest.mark.slow
async def test_real_langchain_agent_loop_uses_the_tool_then_answers(local: LocalChatModel) -> None:
    from langchain.agents import create_agent

    agent = create_agent(
        local,
        tools=[run_bash],
        system_prompt=(
            "Call a tool when you need information. Once a tool result is in the conversation, "
            "do not call the tool again: answer the user in plain text."
        ),
    )
    state = await agent.ainvoke(
        {"messages": [HumanMessage("How many files are in /testbed? Use the tool, then answer.")]},
        {"recursion_limit": 8},
    )
    messages = state["messages"]
    assert any(isinstance(m, ToolMessage) for m in messages)
    final = messages[-1]
    assert isinstance(final, AIMessage) and not final.tool_calls and str(final.content).strip()


@pytest.mark.slow
def test_real_context_overflow_is_a_clear_error() -> None:
    small = LocalChatModel(n_ctx=256, max_tokens=8)
    with pytest.raises(ChatModelError, match="exceeds the available context size"):
        small.invoke("word " * 600)


@pytest.mark.slow
def test_models_with_the_same_weights_and_settings_share_one_server(local: LocalChatModel) -> None:
    twin = LocalChatModel(max_tokens=10, n_ctx=4096, temperature=0.5)
    assert twin.load() is local.load()

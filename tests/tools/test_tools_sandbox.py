"""SandboxToolkit: run_bash on a bare, real sandbox, driven the way LangChain drives tools."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.messages import ToolMessage

from intercode_agents.errors import ConfigError
from intercode_agents.sandbox import Sandbox
from intercode_agents.tools import SandboxToolkit


@pytest.fixture
async def sandbox(bash_image: str):
    async with Sandbox(bash_image, cmd=["sleep", "infinity"]) as sb:
        yield sb


def call(command: str, call_id: str = "call-1") -> dict[str, object]:
    return {"type": "tool_call", "name": "run_bash", "args": {"command": command}, "id": call_id}


async def test_run_bash_returns_content_and_artifact(sandbox: Sandbox) -> None:
    (tool,) = SandboxToolkit(sandbox=sandbox).get_tools()
    assert tool.name == "run_bash"
    message = await tool.ainvoke(call("cd /tmp && echo hello > x.txt && cat x.txt"))
    assert isinstance(message, ToolMessage)
    assert message.status == "success"
    assert message.content == "hello\n"
    assert message.artifact["exit_code"] == 0
    assert message.artifact["output"] == "hello\n"
    # the session persists: the cd of the previous call still holds
    second = await tool.ainvoke(call("pwd; ls", "call-2"))
    assert second.content == "/tmp\nx.txt\n"


async def test_failing_command_shows_exit_code_to_the_model(sandbox: Sandbox) -> None:
    (tool,) = SandboxToolkit(sandbox=sandbox).get_tools()
    message = await tool.ainvoke(call("ls /no/such/dir"))
    assert message.status == "success"  # a failing command is an observation, not a tool error
    assert "No such file or directory" in message.content
    assert message.content.rstrip().endswith("[exit code: 2]")
    assert message.artifact["errored"] is True


async def test_long_output_is_cut_for_the_model_but_kept_in_the_artifact(sandbox: Sandbox) -> None:
    (tool,) = SandboxToolkit(sandbox=sandbox, observation_limit=300).get_tools()
    message = await tool.ainvoke(call("seq 1 5000"))
    assert len(message.content) < 400
    assert message.content.startswith("1\n2\n3\n")
    assert message.content.rstrip().endswith("5000")
    assert "characters omitted" in message.content
    assert message.artifact["observation_truncated"] is True
    assert message.artifact["output"].count("\n") == 5000


async def test_timeout_is_reported_and_the_session_survives(sandbox: Sandbox) -> None:
    (tool,) = SandboxToolkit(sandbox=sandbox, timeout=1.0).get_tools()
    message = await tool.ainvoke(call("echo start; sleep 30"))
    assert message.artifact["timed_out"] is True
    assert "timed out" in message.content.lower()
    after = await tool.ainvoke(call("echo alive", "call-2"))
    assert after.content == "alive\n"


async def test_bad_input_becomes_a_message_not_an_exception(sandbox: Sandbox) -> None:
    (tool,) = SandboxToolkit(sandbox=sandbox).get_tools()
    empty = await tool.ainvoke(call("   "))
    assert empty.status == "error"
    assert "empty" in empty.content
    missing = await tool.ainvoke({"type": "tool_call", "name": "run_bash", "args": {}, "id": "c"})
    assert missing.status == "error"


async def test_sync_invoke_points_to_the_async_api(sandbox: Sandbox) -> None:
    (tool,) = SandboxToolkit(sandbox=sandbox).get_tools()
    with pytest.raises(ConfigError, match="async-only"):
        await asyncio.to_thread(tool.invoke, {"command": "ls"})


async def test_toolkits_run_concurrently_with_their_own_sessions(bash_image: str) -> None:
    async with (
        Sandbox(bash_image, cmd=["sleep", "infinity"]) as one,
        Sandbox(bash_image, cmd=["sleep", "infinity"]) as two,
    ):
        tools = [SandboxToolkit(sandbox=sb).get_tools()[0] for sb in (one, two, one)]
        started = asyncio.get_running_loop().time()
        messages = await asyncio.gather(
            *(tool.ainvoke(call(f"sleep 1; echo {i}; echo $$", f"c{i}")) for i, tool in enumerate(tools))
        )
        elapsed = asyncio.get_running_loop().time() - started
    assert [m.content.split("\n")[0] for m in messages] == ["0", "1", "2"]
    shell_pids = {m.content.split("\n")[1] for m in messages}
    assert len(shell_pids) >= 2  # each toolkit opened its own session
    assert elapsed < 2.5  # three 1-second commands ran at the same time

"""Issue finding 11: text that is not valid Unicode is an invalid action in every env, never a crash."""

from __future__ import annotations

import pytest

from intercode_agents import make_env
from intercode_agents.errors import InvalidAction
from intercode_agents.sandbox import Sandbox
from intercode_agents.tools import EnvToolkit

CASES = {
    "bash": ("bash/mini/0", "echo \ud800", "ls"),
    "sql": ("sql/mini/0", "SELECT '\ud800'", "SELECT 1"),
    "python": ("python/mini/0", "print('\ud800')", "print(1)"),
    "ctf": ("ctf/0", "echo \udfff", "ls"),
}


@pytest.mark.parametrize("name", sorted(CASES))
async def test_a_lone_surrogate_is_an_invalid_action_in_every_env(name):
    task_id, bad, good = CASES[name]
    async with make_env(name) as env:
        await env.reset(task_id=task_id)
        for action in (bad, f"submit {bad}", "\ud800"):
            obs, reward, done, _, info = await env.gym.step(action)
            assert obs.startswith("Invalid action:") and "not valid Unicode" in obs, obs
            assert info["action_type"] == "invalid" and not done and reward == 0.0
        obs, _, _, _, info = await env.gym.step(good)
        assert info["action_type"] == "action" and not info["errored"], obs
        tool = next(t for t in EnvToolkit(env=env).get_tools() if t.name.startswith("run_"))
        field = next(iter(tool.args))  # command | query | code
        call = {"type": "tool_call", "id": "1", "name": tool.name, "args": {field: bad}}
        seen = await tool.ainvoke(call)
        assert "not valid Unicode" in str(seen.content)


async def test_the_sandbox_refuses_a_lone_surrogate_and_keeps_raw_bytes(bash_image):
    async with Sandbox(bash_image) as sb:
        shell = await sb.shell()
        with pytest.raises(InvalidAction, match="not valid Unicode"):
            await shell.run("echo \ud800")
        raw = "printf '%s' '\udcff' | od -An -tx1"  # a surrogate escape carries the raw byte 0xff
        assert (await shell.run(raw)).output.split() == ["ff"]

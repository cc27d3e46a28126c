"""An agent that destroys its own sandbox gets a failed score with the reason, never an env error."""

from __future__ import annotations

import pytest

from intercode_agents import make_env

SABOTAGE = {
    "bash": ("bash/mini/1", ["kill -9 -1", "echo after"], "submit"),
    "ctf": ("ctf/0", ["kill -TERM 1; sleep 2", "ls"], "submit picoCTF{guess}"),
    "python": ("python/mini/0", ["import os, signal\nos.kill(-1, signal.SIGKILL)", "print(1)"], "submit f"),
}


@pytest.mark.parametrize("name", sorted(SABOTAGE))
async def test_a_destroyed_sandbox_ends_in_a_failed_score_with_its_reason(name):
    task_id, actions, submit = SABOTAGE[name]
    async with make_env(name) as env:
        await env.reset(task_id=task_id)
        for action in actions:
            obs, _, done, _, info = await env.gym.step(action)
            assert not done
        assert "can no longer run actions" in obs and info["errored"]
        scored = await env.evaluate()
        assert scored.reward == 0.0 and scored.parts["sandbox_lost"] is True
        _, reward, done, _, info = await env.gym.step(submit)
        assert done and reward == 0.0 and info["reward_parts"]["sandbox_lost"] is True
        assert info["reward_parts"]["sandbox_lost_reason"]

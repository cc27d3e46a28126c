"""Groups of rollouts (``runner/groups.py``): k episodes of one task at once, each in a sandbox of its
own, returned in sample order with seeds that differ; envs kept open carry their warm pools from one
group to the next; bad arguments are clear errors."""

from __future__ import annotations

import pytest

from intercode_agents.envs import make_env
from intercode_agents.errors import ConfigError
from intercode_agents.runner.groups import play_group
from intercode_agents.runner.players import GoldPlayer, ScriptPlayer

# Each episode leaves a mark of its own and counts the marks it sees: 1 in a sandbox of its own.
MARK = "touch /tmp/mark.$RANDOM$RANDOM && ls /tmp | grep -c '^mark'"


async def test_a_group_plays_k_episodes_of_one_task_each_in_a_sandbox_of_its_own() -> None:
    player = ScriptPlayer({"bash/mini/0": [MARK, "grep -c ERROR /testbed/logs/app.log", "submit"]})
    group = await play_group("bash", "bash/mini/0", 4, player, seed=10)
    assert [t.epoch for t in group] == [1, 2, 3, 4] and [t.seed for t in group] == [10, 11, 12, 13]
    assert all(t.task_id == "bash/mini/0" and t.outcome in ("solved", "failed") for t in group)
    assert len({t.reward for t in group}) == 1  # the same actions in sandboxes alike: the same score
    assert [t.steps[0].observation.strip() for t in group] == ["1"] * 4


async def test_envs_kept_open_serve_one_group_after_another() -> None:
    envs = [make_env("bash", pool_size=1) for _ in range(3)]
    for env in envs:
        await env.start()
    try:
        first = await play_group("bash", "bash/mini/3", 3, GoldPlayer(), envs=envs)
        second = await play_group("bash", "bash/mini/0", 2, GoldPlayer(), envs=envs)
    finally:
        for env in envs:
            await env.close()
    assert [t.reward for t in first] == [1.0] * 3 and [t.reward for t in second] == [1.0] * 2


async def test_bad_groups_are_clear_errors() -> None:
    with pytest.raises(ConfigError, match="at least one episode"):
        await play_group("bash", "bash/mini/0", 0, GoldPlayer())
    with pytest.raises(ConfigError, match="needs 3 envs"):
        await play_group("bash", "bash/mini/0", 3, GoldPlayer(), envs=[make_env("bash")])
    with pytest.raises(Exception, match="unknown task"):
        await play_group("bash", "bash/mini/404", 2, GoldPlayer())

"""The SkyRL-gym environments, made with skyrl-gym's own ``make`` and driven as SkyRL's generator drives
them (``init``, then ``step`` with the model's whole reply, then ``close``, all synchronous): a gold
episode of each family scores 1, replies are read by the strategies' parser, the turn budget ends the
episode with its reward, many envs step at once from many threads and from inside a running event
loop, and an env dropped without ``close`` leaves no container once its process ends."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import docker
import pytest
import skyrl_gym

import intercode_agents.integrations.skyrl as adapter
from intercode_agents.datasets import get_task
from intercode_agents.envs.registry import env_class
from intercode_agents.errors import ConfigError
from intercode_agents.runner.direct import gold_actions
from intercode_agents.sandbox.config import LABEL_RUN
from tests import ROOT

GOLD_TASKS = {"bash": "bash/mini/6", "sql": "sql/mini/0", "python": "python/mini/0", "ctf": "ctf/mini/0"}


def reply(action: str) -> str:
    """How a ReAct model writes an action: a thought, then the action in a fenced block."""
    return f"Thought: this should do it.\nAction:\n```\n{action}\n```"


def play(env_id: str, task_id: str, replies: list[str], **extras: Any) -> tuple[Any, list[dict[str, Any]]]:
    env = skyrl_gym.make(env_id, env_config={}, extras={"task_id": task_id, **extras})
    conversation, _ = env.init([{"role": "user", "content": "(the row's placeholder)"}])
    outputs = [env.step(text) for text in replies]
    env.close()
    return conversation, outputs


def test_importing_the_module_registers_every_env() -> None:
    assert {"intercode-bash", "intercode-sql", "intercode-python", "intercode-ctf"} <= set(skyrl_gym.registry)
    assert adapter.register("bash") == "intercode-bash"  # again: harmless
    env_id = adapter.register(ROOT / "examples" / "custom_env" / "jq.yaml")
    assert env_id == "intercode-jq" and env_id in skyrl_gym.registry
    rows = adapter.dataset_rows("bash", "bash/mini/0,bash/mini/1")
    assert [(r["env_class"], r["task_id"]) for r in rows] == [
        ("intercode-bash", "bash/mini/0"),
        ("intercode-bash", "bash/mini/1"),
    ]


@pytest.mark.parametrize("family", sorted(GOLD_TASKS))
def test_a_gold_episode_of_each_family_scores_1(family: str) -> None:
    task = get_task(GOLD_TASKS[family])
    conversation, outputs = play(f"intercode-{family}", task.id, [reply(a) for a in gold_actions(task)])
    system, user = conversation
    assert system["role"] == "system" and "Thought:" in system["content"]  # the ReAct prompts
    assert user == {"role": "user", "content": f"Task: {task.query}"} or task.query in user["content"]
    *actions, submit = outputs
    assert all(not o["done"] and o["reward"] == 0.0 for o in actions)
    assert all(o["observations"][0]["content"].startswith("Observation:") for o in actions)
    assert submit["done"] and submit["reward"] == 1.0 and submit["observations"] == []
    assert set(submit["metadata"]["reward_parts"]) <= set(env_class(family).agent_parts) | {
        "sandbox_lost",
        "sandbox_lost_reason",
    }


def test_replies_are_read_by_the_strategies_parser_and_the_turn_budget_ends_the_episode() -> None:
    task = get_task("bash/mini/0")
    replies = [
        "I am not sure what to do.",  # no action: a turn is used, nothing runs
        f"Thought: count them.\nAction: {task.gold}",  # an Action: line, no fence
    ]
    env = skyrl_gym.make("intercode-bash", env_config={}, extras={"task_id": task.id, "max_turns": 2})
    env.init([{"role": "system", "content": "Our own system prompt."}, {"role": "user", "content": "-"}])
    invalid = env.step(replies[0])
    assert not invalid["done"] and "held no action" in invalid["observations"][0]["content"]
    last = env.step(replies[1])  # the last turn: the episode is submitted as it stands
    assert last["done"] and last["reward"] == 1.0 and last["metadata"]["submit"]["forced"] is True
    assert env.get_metrics() == {"env_error": 0, "solved": 1.0, "reward": 1.0, "turns": 2}
    env.close()


def test_a_system_message_of_the_row_replaces_ours() -> None:
    env = skyrl_gym.make("intercode-sql", env_config={}, extras={"task_id": "sql/mini/0"})
    conversation, info = env.init(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "-"}]
    )
    env.close()
    assert conversation[0] == {"role": "system", "content": "Be brief."} and len(conversation) == 2
    assert info["task"]["id"] == "sql/mini/0" and "gold" not in info["task"]


def test_bad_settings_are_clear_errors() -> None:
    with pytest.raises(ConfigError, match="unknown env_config keys"):
        skyrl_gym.make("intercode-bash", env_config={"max_turn": 3}, extras={"task_id": "bash/mini/0"})
    env = skyrl_gym.make(
        "intercode-bash", env_config={"tasks": "bash/mini/0"}, extras={"task_id": "bash/mini/1"}
    )
    with pytest.raises(Exception, match="no task this server plays"):
        env.init([])
    env.close()


def test_many_envs_step_at_once_from_threads_and_from_a_running_event_loop() -> None:
    """SkyRL runs every trajectory of a batch in one process: env calls come from its worker threads,
    or (max_env_workers=0) from its event loop's own thread. All share one adapter loop."""
    task = get_task("bash/mini/0")
    replies = [reply(task.gold), reply("submit")]

    def one(_: int) -> float:
        return play("intercode-bash", task.id, replies)[1][-1]["reward"]

    async def inside_a_loop() -> float:
        return one(0)  # blocking calls from a loop's thread, as with max_env_workers=0

    with ThreadPoolExecutor(max_workers=8) as pool:
        threaded = list(pool.map(one, range(8)))
    assert threaded == [1.0] * 8
    assert asyncio.run(inside_a_loop()) == 1.0


LEAVER = textwrap.dedent(
    """
    import gc, sys, time
    import docker
    import skyrl_gym
    import intercode_agents.integrations.skyrl

    kept = skyrl_gym.make("intercode-bash", env_config={}, extras={"task_id": "bash/mini/0"})
    kept.init([])
    kept.step("Action: ls /testbed")  # never closed: the process's exit must remove its sandbox
    dropped = skyrl_gym.make("intercode-bash", env_config={}, extras={"task_id": "bash/mini/1"})
    dropped.init([])
    sandbox = dropped._rollout.env.sandbox.id
    del dropped
    gc.collect()  # dropped without close: its finalizer removes its sandbox, the process goes on
    deadline = time.monotonic() + 60
    while docker.from_env().api.containers(all=True, filters={"id": sandbox}):
        assert time.monotonic() < deadline, "the dropped env's sandbox is still there"
        time.sleep(0.2)
    print("finalized", flush=True)
    """
)


def test_envs_never_closed_leave_no_container_once_the_process_ends() -> None:
    run_id = f"skyrl-{uuid.uuid4().hex[:8]}"
    done = subprocess.run(
        [sys.executable, "-c", LEAVER],
        env={**os.environ, "INTERCODE_AGENTS_RUN_ID": run_id},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and done.stdout.strip() == "finalized", done.stderr[-3000:]
    assert "Unclosed" not in done.stderr  # the adapter loop's engine connections were closed too
    left = docker.from_env().api.containers(all=True, filters={"label": f"{LABEL_RUN}={run_id}"})
    assert left == []


def test_an_env_that_fails_ends_the_episode_without_failing_the_batch() -> None:
    env_id = adapter.register(ROOT / "tests" / "faulty_env" / "faulty.yaml")
    env = skyrl_gym.make(env_id, env_config={}, extras={"task_id": "faulty/mini/0"})
    env.init([])
    sandbox = env._rollout.env.sandbox.id
    out = env.step("Action: explode")
    assert out["done"] and out["reward"] == 0.0 and "the engine went away" in out["metadata"]["env_error"]
    assert env.get_metrics()["env_error"] == 1
    assert env._rollout.trajectory.outcome == "env_error"
    assert not docker.from_env().api.containers(all=True, filters={"id": sandbox})
    env.close()

"""The step-level rollout every RL front end drives (``runner/rollout.py``): text actions in, what an
agent may see out, each episode recorded; tasks chosen by id or drawn by selector and seed within the
allowed ones; an env that fails ends the episode as ``env_error`` with a clear error; a closed rollout
has removed its sandbox and takes no more calls."""

from __future__ import annotations

import docker
import pytest

from intercode_agents.datasets import get_task
from intercode_agents.runner.rollout import EpisodeFailed, Rollout, RolloutError, RolloutOptions
from intercode_agents.trajectory import Trajectory
from tests import ROOT

FAULTY = ROOT / "tests" / "faulty_env" / "faulty.yaml"


def exists(container: str) -> bool:
    return bool(docker.from_env().api.containers(all=True, filters={"id": container}))


async def test_a_text_episode_is_recorded_and_shows_only_what_an_agent_may_see() -> None:
    records: list[Trajectory] = []
    rollout = Rollout(
        "python", RolloutOptions(client="test", observation_limit=300), on_record=records.append
    )
    task = get_task("python/mini/0")
    opened = await rollout.reset(task.id, seed=5)
    assert opened.observation == task.query and opened.info["task"]["fields"] == dict(task.public_fields)
    printed = await rollout.act("print('x' * 5000)")  # cut as a model sees it, head and tail
    assert printed.info["observation_truncated"] and len(printed.observation) < 600
    defined = await rollout.act(task.gold)
    assert not defined.done and defined.info["turn"] == 2
    submitted = await rollout.act("submit")  # Python's default answer: the function the task names
    assert submitted.done and submitted.reward == 1.0 and submitted.info["solved"]
    assert "tests" not in submitted.info["reward_parts"]  # how many hidden tests there are: the gold's
    (record,) = records
    assert record.solved and record.strategy == "test" and record.seed == 5
    assert record.steps[-1].action == f"submit {task.meta['entry_point']}"
    assert record.context["episode_id"] == opened.info["episode_id"] == rollout.state()["episode_id"]
    assert "tests" in record.reward_parts  # the record keeps every part
    with pytest.raises(RolloutError, match="call reset first"):
        await rollout.act("print(1)")
    sandbox = rollout.env.sandbox.id  # type: ignore[union-attr]
    await rollout.close()
    assert not exists(sandbox)
    with pytest.raises(RolloutError, match="closed"):
        await rollout.reset(task.id)


async def test_tasks_are_chosen_within_the_allowed_ones() -> None:
    rollout = Rollout("bash", RolloutOptions(tasks="bash/mini/1,bash/mini/2,bash/mini/3"))
    try:
        drawn = [(await rollout.reset(selector="bash/mini/*", seed=s)).info["task"]["id"] for s in range(6)]
        assert set(drawn) <= {"bash/mini/1", "bash/mini/2", "bash/mini/3"} and len(set(drawn)) > 1
        again = [(await rollout.reset(selector="bash/mini/*", seed=s)).info["task"]["id"] for s in range(6)]
        assert again == drawn  # a seed draws the same task every time
        plain = await rollout.reset(seed=1)  # no id, no selector: drawn from the allowed tasks
        assert plain.info["task"]["id"] in drawn
        with pytest.raises(RolloutError, match="no task this server plays"):
            await rollout.reset("bash/mini/0")
        with pytest.raises(RolloutError, match="not both"):
            await rollout.reset("bash/mini/1", selector="mini")
        with pytest.raises(RolloutError, match="unknown task"):
            await rollout.reset("bash/mini/999")
        with pytest.raises(RolloutError, match="does not belong"):
            await rollout.reset(selector="sql/mini/*")
    finally:
        await rollout.close()


async def test_an_env_that_fails_ends_the_episode_as_an_env_error() -> None:
    records: list[Trajectory] = []
    rollout = Rollout(FAULTY, on_record=records.append)
    await rollout.reset("faulty/mini/0")
    await rollout.step("ls /testbed")
    with pytest.raises(EpisodeFailed, match="the engine went away"):
        await rollout.step("explode")
    (record,) = records
    assert record.outcome == "env_error" and "the engine went away" in (record.error or "")
    assert rollout.done
    with pytest.raises(RolloutError, match="no episode is running"):
        await rollout.step("ls")
    again = await rollout.reset("faulty/mini/0")  # the rollout itself goes on
    assert not again.done
    await rollout.close()
    assert records[-1].outcome == "failed" and records[-1].error == "not submitted: the client went away"

"""The TRL environment classes, called the way TRL's GRPO trainer (trl 1.16, ``grpo_trainer.py``) calls
an ``environment_factory``: the factory with no arguments, the tools found with
``inspect.getmembers(type(env), inspect.isfunction)`` (public, not ``reset`` or ``get_reward``) and
described by transformers' ``get_json_schema``, ``reset(**row)`` with the whole dataset row (its
string appended to the last prompt message), the tools with keyword arguments, ``get_reward()`` at the
end, and the same instance reset again for the next rollout. TRL's own trainer drives a Bash
environment in test_trl_trainer.py."""

from __future__ import annotations

import inspect
import pickle
from collections.abc import Callable
from typing import Any

import docker
import pytest
from transformers.utils import get_json_schema

from intercode_agents.datasets import get_task
from intercode_agents.errors import ConfigError
from intercode_agents.integrations.trl import (
    BashEnvironment,
    CTFEnvironment,
    PythonEnvironment,
    SQLEnvironment,
    environment_factory,
)
from intercode_agents.runner.direct import gold_actions
from intercode_agents.runner.rollout import EpisodeFailed, RolloutError
from tests import ROOT


def tools_of(env: object) -> dict[str, Callable[..., Any]]:
    """TRL's rule: the class's public functions but reset and get_reward, bound to the instance."""
    return {
        name: getattr(env, name)
        for name, _ in inspect.getmembers(type(env), predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    }


def trainer_prompt(env: Any, row: dict[str, Any]) -> str:
    """What TRL does with reset's answer: the last prompt message's content, with it appended."""
    prompt = row.get("prompt", [{"role": "user", "content": ""}])
    observation = env.reset(**row)
    return prompt[-1]["content"] + (observation or "")


def sandbox_of(env: Any) -> str:
    return env._rollout.env.sandbox.id


@pytest.mark.parametrize(
    ("env_name", "cls", "tools", "answer_argument"),
    [
        ("bash", BashEnvironment, ["run_bash", "submit"], False),
        ("sql", SQLEnvironment, ["run_sql", "submit"], False),
        ("python", PythonEnvironment, ["run_python", "submit"], True),
        ("ctf", CTFEnvironment, ["run_bash", "submit"], True),
    ],
)
def test_each_env_offers_its_tools_with_schemas_the_trainer_accepts(
    env_name: str, cls: type, tools: list[str], answer_argument: bool
) -> None:
    factory = environment_factory(env_name)
    env = factory()
    assert type(env) is cls
    found = tools_of(env)
    assert sorted(found) == sorted(tools)
    schemas = {name: get_json_schema(tool)["function"] for name, tool in found.items()}
    submit = schemas["submit"]["parameters"]
    assert (submit.get("required") == ["answer"]) == answer_argument
    run = next(schema for name, schema in schemas.items() if name.startswith("run_"))
    assert run["parameters"]["required"] and run["description"]
    assert pickle.loads(pickle.dumps(factory))().__class__ is cls  # AsyncGRPOTrainer's workers


@pytest.mark.parametrize("task_id", ["bash/mini/6", "sql/mini/0", "python/mini/0", "ctf/mini/0"])
def test_a_gold_rollout_earns_reward_1_through_the_tools(task_id: str) -> None:
    task = get_task(task_id)
    env = environment_factory(task.env)()
    prompt = trainer_prompt(env, {"prompt": [{"role": "user", "content": ""}], "task_id": task_id})
    assert task.query in prompt and "submit" in prompt  # the instructions too: the row has no system text
    tools = tools_of(env)
    run = next(tool for name, tool in tools.items() if name.startswith("run_"))
    argument = next(iter(inspect.signature(run).parameters))
    for action in gold_actions(task):
        if action.startswith("submit"):
            answer = action.removeprefix("submit").strip()
            result = tools["submit"](answer=answer) if answer else tools["submit"]()
            assert result.startswith("Submitted.")
        else:
            run(**{argument: action})
    assert env.get_reward() == 1.0
    with pytest.raises(RuntimeError, match="the episode is over"):
        run(**{argument: "echo again"})  # TRL hands the model {"error": ...}
    env._close()


def test_an_instance_is_reset_often_and_its_previous_sandbox_goes() -> None:
    env = BashEnvironment()
    row = {"prompt": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Solve:"}]}
    first = env.reset(**row, task_id="bash/mini/0")
    assert first.startswith("\n\nTask: ") and "You act through tools" not in first  # the row's system text
    old = sandbox_of(env)
    env.run_bash(command="echo hi > /testbed/mine")
    second = env.reset(**row, task_id="bash/mini/0")  # the next rollout, no submit in between
    assert second == first and sandbox_of(env) != old
    assert not docker.from_env().api.containers(all=True, filters={"id": old})
    assert "No such file" in env.run_bash(command="cat /testbed/mine")  # a pristine sandbox
    assert env._rollout.trajectory.error.startswith("not submitted")  # the first rollout's record
    env._close()


def test_an_unsubmitted_rollout_is_scored_as_it_stands() -> None:
    task = get_task("bash/mini/0")
    env = BashEnvironment(max_turns=None)
    env.reset(task_id=task.id)
    env.run_bash(command=task.gold)
    assert env.get_reward() == 1.0  # the runner's forced submit of the last output
    steps = env._rollout.trajectory.steps
    assert steps[-1].kind == "submit" and "submitted as it stands" in (steps[-1].thought or "")
    assert env.get_reward() == 1.0  # asked again: the same record
    env._close()


def test_the_turn_budget_and_bad_rows_are_clear() -> None:
    env = BashEnvironment(max_turns=1, tasks="bash/mini/0")
    with pytest.raises(RolloutError, match="no task this server plays"):
        env.reset(task_id="bash/mini/3")
    env.reset(task_id="bash/mini/0")
    shown = env.run_bash(command="ls /testbed")
    assert "turn limit reached" in shown
    with pytest.raises(RuntimeError, match="the episode is over"):
        env.run_bash(command="ls")
    assert env.get_reward() is not None and env.get_reward() < 1.0
    env._close()


def test_the_factory_picks_the_class_for_a_users_env() -> None:
    factory = environment_factory(ROOT / "examples" / "custom_env" / "jq.yaml")
    env = factory()
    assert type(env) is BashEnvironment and env._env.endswith("jq.yaml")
    with pytest.raises(ConfigError, match="unknown env"):
        environment_factory("cobol")


def test_an_env_that_fails_gives_no_reward_rather_than_a_false_zero() -> None:
    env = environment_factory(ROOT / "tests" / "faulty_env" / "faulty.yaml")()
    env.reset(task_id="faulty/mini/0")
    with pytest.raises(EpisodeFailed, match="the engine went away"):  # TRL hands the model the error
        env.run_bash(command="explode")
    with pytest.raises(RuntimeError, match="the episode is over"):
        env.run_bash(command="ls")
    assert env.get_reward() is None  # TRL leaves a None out of the loss
    env._close()

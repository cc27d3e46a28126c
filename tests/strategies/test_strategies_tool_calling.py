"""The tool_calling strategy on a real env, with a scripted tool-calling model."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, ToolMessage

from intercode_agents import make_env
from intercode_agents.models.scripted import ScriptedChatModel
from intercode_agents.strategies import get_strategy

COUNT_ERRORS = "grep -c ERROR /testbed/logs/app.log"


def calls(*specs: tuple[str, dict[str, str]], prefix: str = "c") -> AIMessage:
    tool_calls = [
        {"name": name, "args": args, "id": f"{prefix}{i}", "type": "tool_call"}
        for i, (name, args) in enumerate(specs)
    ]
    return AIMessage(content="", tool_calls=tool_calls)


@pytest.fixture(scope="module")
async def bash_env():
    async with make_env("bash") as env:
        yield env


async def test_tool_calling_solves_a_task(bash_env) -> None:
    model = ScriptedChatModel(
        [
            calls(("run_bash", {"command": "ls /testbed/logs"}), prefix="a"),
            calls(("run_bash", {"command": COUNT_ERRORS}), prefix="b"),
            calls(("submit", {}), prefix="c"),
        ]
    )
    trajectory = await get_strategy("tool_calling", max_turns=5).run(bash_env, model, task_id="bash/mini/0")
    assert model.bound_tools == ["run_bash", "submit"]
    assert trajectory.outcome == "solved" and trajectory.reward == pytest.approx(1.0)
    assert [(s.kind, s.action) for s in trajectory.steps] == [
        ("action", "ls /testbed/logs"),
        ("action", COUNT_ERRORS),
        ("submit", "submit"),
    ]
    assert trajectory.steps[1].exit_code == 0 and trajectory.steps[1].observation.strip() == "2"
    answers = [m for m in model.calls[-1] if isinstance(m, ToolMessage)]
    assert [m.tool_call_id for m in answers] == ["a0", "b0"]  # every call got its answer back


async def test_bad_calls_are_invalid_steps_and_the_model_is_reminded(bash_env) -> None:
    model = ScriptedChatModel(
        [
            "I would count the lines.",  # no tool call
            calls(("delete_everything", {})),  # unknown tool
            calls(("run_bash", {"command": ""})),  # invalid action
            AIMessage(
                content="",
                invalid_tool_calls=[
                    {
                        "name": "run_bash",
                        "args": '{"command": "ls',
                        "id": "x1",
                        "error": "bad JSON",
                        "type": "invalid_tool_call",
                    }
                ],
            ),
            calls(("run_bash", {"command": COUNT_ERRORS}), ("submit", {})),  # two calls in one turn
        ]
    )
    trajectory = await get_strategy("tool_calling", max_turns=8).run(bash_env, model, task_id="bash/mini/0")
    assert [s.kind for s in trajectory.steps] == [
        "invalid",
        "invalid",
        "invalid",
        "invalid",
        "action",
        "submit",
    ]
    assert "calling a tool" in trajectory.steps[0].observation
    assert "unknown tool 'delete_everything'" in trajectory.steps[1].observation
    assert "empty" in trajectory.steps[2].observation
    assert "could not be read: bad JSON" in trajectory.steps[3].observation
    assert trajectory.outcome == "solved"


async def test_budget_end_forces_a_submit_and_answers_extra_calls(bash_env) -> None:
    model = ScriptedChatModel([calls(("run_bash", {"command": "ls"}), ("run_bash", {"command": "pwd"}))])
    trajectory = await get_strategy("tool_calling", max_turns=1).run(bash_env, model, task_id="bash/mini/0")
    assert [s.kind for s in trajectory.steps] == ["action", "submit"]
    assert trajectory.steps[0].action == "ls"  # the second call was not run
    assert trajectory.outcome == "failed"


async def test_python_submit_carries_the_function_name() -> None:
    async with make_env("python") as env:
        await env.reset("python/mini/2")
        gold, name = env.task.gold, env.task.meta["entry_point"]
        model = ScriptedChatModel(
            [calls(("run_python", {"code": gold})), calls(("submit", {"answer": name}))]
        )
        trajectory = await get_strategy("tool_calling").run(env, model, task_id="python/mini/2")
    assert trajectory.steps[-1].action == f"submit {name}"
    assert trajectory.outcome == "solved"

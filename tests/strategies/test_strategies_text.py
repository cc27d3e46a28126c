"""Try Again, ReAct and Plan & Solve on real envs with scripted chat models."""

from __future__ import annotations

import re

import pytest
from langchain_core.messages import AIMessage, BaseMessage

from intercode_agents import make_env
from intercode_agents.models.scripted import ScriptedChatModel
from intercode_agents.strategies import get_strategy

COUNT_ERRORS = "grep -c ERROR /testbed/logs/app.log"
USAGE = {"input_tokens": 100, "output_tokens": 10, "total_tokens": 110}


@pytest.fixture(scope="module")
async def bash_env():
    async with make_env("bash") as env:
        yield env


def last_prompt(model: ScriptedChatModel) -> str:
    return str(model.calls[-1][-1].content)


# -- Try Again --------------------------------------------------------------------------------------
async def test_try_again_recovers_from_a_wrong_first_action(bash_env) -> None:
    model = ScriptedChatModel(
        [
            AIMessage(content="```bash\ngrep ERROR /testbed/logs/app.log\n```", usage_metadata=USAGE),
            AIMessage(content=f"```bash\n{COUNT_ERRORS}\n```", usage_metadata=USAGE),
        ]
    )
    trajectory = await get_strategy("try_again", max_turns=5).run(bash_env, model, task_id="bash/mini/0")
    assert trajectory.outcome == "solved" and trajectory.reward == pytest.approx(1.0)
    kinds = [step.kind for step in trajectory.steps]
    assert kinds == ["action", "action", "submit"]
    first, second, _ = trajectory.steps
    assert first.reward is not None and first.reward < 1.0
    assert second.reward == pytest.approx(1.0)
    assert "Reward:" in last_prompt(model) and "failed to open" in last_prompt(
        model
    )  # output + reward fed back
    assert (trajectory.input_tokens, trajectory.output_tokens) == (200, 20)
    assert (first.input_tokens, first.output_tokens) == (100, 10)
    assert trajectory.context["max_turns"] == 5


async def test_try_again_submits_at_the_turn_limit(bash_env) -> None:
    model = ScriptedChatModel(["```bash\nls /testbed\n```", "```bash\npwd\n```"])
    trajectory = await get_strategy("try_again", max_turns=2).run(bash_env, model, task_id="bash/mini/0")
    assert trajectory.outcome == "failed"
    assert [step.kind for step in trajectory.steps] == ["action", "action", "submit"]
    assert "turn budget" in (trajectory.steps[-1].thought or "")
    assert trajectory.reward is not None and trajectory.reward < 1.0


# -- ReAct ------------------------------------------------------------------------------------------
async def test_react_reaches_submit(bash_env) -> None:
    model = ScriptedChatModel(
        [
            "Thought: the log lives under /testbed/logs.\nAction: ls /testbed/logs",
            f"Thought: count the ERROR lines.\nAction: {COUNT_ERRORS}\nObservation: (hallucinated)",
            "Thought: the count is printed.\nAction: submit",
        ]
    )
    trajectory = await get_strategy("react", max_turns=6).run(bash_env, model, task_id="bash/mini/0")
    assert trajectory.outcome == "solved"
    assert [step.action for step in trajectory.steps] == ["ls /testbed/logs", COUNT_ERRORS, "submit"]
    assert trajectory.steps[1].thought == "count the ERROR lines."
    assert last_prompt(model).startswith("Observation:")
    system = str(model.calls[0][0].content)
    assert "Here is an example" in system and "Thought:" in system  # the few-shot demo


async def test_malformed_reply_is_an_invalid_step_not_a_crash(bash_env) -> None:
    model = ScriptedChatModel(
        [
            "I am not sure what to do here.\nMaybe look around first?",
            "",
            f"Action: {COUNT_ERRORS}",
            "Action: submit",
        ]
    )
    trajectory = await get_strategy("react", max_turns=6).run(bash_env, model, task_id="bash/mini/0")
    assert [step.kind for step in trajectory.steps] == ["invalid", "invalid", "action", "submit"]
    assert trajectory.steps[0].errored and "no code block" in trajectory.steps[0].observation
    assert "empty" in trajectory.steps[1].observation
    assert "held no action" in str(model.calls[1][-1].content)  # the model was told why
    assert trajectory.outcome == "solved"


async def test_react_forces_a_submit_at_the_turn_limit_and_warns_before(bash_env) -> None:
    model = ScriptedChatModel(["Action: ls", "Action: ls /testbed"])
    trajectory = await get_strategy("react", max_turns=2).run(bash_env, model, task_id="bash/mini/0")
    assert [step.kind for step in trajectory.steps] == ["action", "action", "submit"]
    assert "One turn is left" in last_prompt(model)
    assert trajectory.outcome == "failed"


async def test_observation_limit_and_history_window_apply(bash_env) -> None:
    model = ScriptedChatModel(
        ["Action: seq 1 5000", "Action: echo two", "Action: echo three", "Action: submit"]
    )
    strategy = get_strategy("react", max_turns=5, observation_limit=300, history_turns=1)
    trajectory = await strategy.run(bash_env, model, task_id="bash/mini/0")
    long_step = trajectory.steps[0]
    assert long_step.observation_truncated and len(long_step.observation) < 400
    assert "characters omitted" in long_step.observation
    last = model.calls[-1]  # system, task, one past turn (AI + observation)
    assert len(last) == 4 and "echo three" in str(last[2].content)
    assert trajectory.context["history_turns"] == 1 and trajectory.context["observation_limit"] == 300


# -- Plan & Solve -----------------------------------------------------------------------------------
async def test_plan_solve_runs_every_plan_step(bash_env) -> None:
    model = ScriptedChatModel(
        [
            "Plan:\n1. Look at the notes folder.\n2. Append the line.\n3. Show the file.",
            "```bash\nls /testbed/notes\n```",
            "```bash\necho 'call the plumber' >> /testbed/notes/todo.txt\n```",
            "```bash\ncat /testbed/notes/todo.txt\n```",
        ]
    )
    strategy = get_strategy("plan_solve", max_turns=6, refine_turns=0)
    trajectory = await strategy.run(bash_env, model, task_id="bash/mini/5")
    assert trajectory.context["plan"] == ["Look at the notes folder.", "Append the line.", "Show the file."]
    actions = [step for step in trajectory.steps if step.kind == "action"]
    assert [step.thought for step in actions] == [
        "plan step 1: Look at the notes folder.",
        "plan step 2: Append the line.",
        "plan step 3: Show the file.",
    ]
    assert "Step 3: Show the file." in last_prompt(model)
    assert trajectory.steps[-1].kind == "submit"
    assert trajectory.reward is not None and trajectory.reward > 0.5  # the file change is right


async def test_plan_solve_refines_when_the_plan_fails(bash_env) -> None:
    model = ScriptedChatModel(
        [
            "1. Print the log.",
            "```bash\ncat /testbed/logs/app.log\n```",
            f"```bash\n{COUNT_ERRORS}\n```",
        ]
    )
    strategy = get_strategy("plan_solve", max_turns=5, refine_turns=2)
    trajectory = await strategy.run(bash_env, model, task_id="bash/mini/0")
    assert "the result is not correct yet" in last_prompt(model)
    assert [step.kind for step in trajectory.steps] == ["action", "action", "submit"]
    assert trajectory.steps[1].reward == pytest.approx(1.0)
    assert trajectory.outcome == "solved"


# -- Python and SQL through the same strategies ------------------------------------------------------
async def test_react_on_python_submits_the_entry_point() -> None:
    async with make_env("python") as env:
        await env.reset("python/mini/2")
        gold = env.task.gold
        model = ScriptedChatModel([f"Action:\n```python\n{gold}\n```", "Action: submit"])
        trajectory = await get_strategy("react", max_turns=4).run(env, model, task_id="python/mini/2")
    assert trajectory.outcome == "solved", trajectory.steps
    assert trajectory.steps[-1].action == f"submit {env.task.meta['entry_point']}"
    assert env.task.meta["entry_point"] in str(model.calls[0][1].content)  # the task names the function


async def test_try_again_on_sql_with_a_cte() -> None:
    async with make_env("sql") as env:
        await env.reset("sql/mini/5")
        gold = env.task.gold
        model = ScriptedChatModel(["```sql\nSELECT name FROM member\n```", f"```sql\n{gold}\n```"])
        trajectory = await get_strategy("try_again", max_turns=4).run(env, model, task_id="sql/mini/5")
    assert trajectory.outcome == "solved"
    assert trajectory.steps[0].reward is not None and trajectory.steps[0].reward < 1
    assert trajectory.steps[1].action == gold


# -- CTF: the flag comes from what the model saw ------------------------------------------------------
def submit_seen_flag(messages: list[BaseMessage]) -> str:
    """A scripted reply that submits the flag printed in the last observation."""
    flag = re.search(r"picoCTF\{[^}]*\}", str(messages[-1].content))
    return f"Thought: that is the flag.\nAction: submit {flag.group(0) if flag else 'none'}"


async def test_react_on_ctf_submits_the_decoded_flag() -> None:
    async with make_env("ctf") as env:
        model = ScriptedChatModel(["Action: base64 -d message.txt", submit_seen_flag])
        trajectory = await get_strategy("react", max_turns=4).run(env, model, task_id="ctf/mini/0")
    assert trajectory.outcome == "solved"
    assert trajectory.steps[-1].action.startswith("submit picoCTF{")


async def test_forced_ctf_submit_uses_the_last_flag_seen() -> None:
    async with make_env("ctf") as env:
        model = ScriptedChatModel(["Action: base64 -d message.txt"])
        trajectory = await get_strategy("react", max_turns=1).run(env, model, task_id="ctf/mini/0")
    assert [step.kind for step in trajectory.steps] == ["action", "submit"]
    assert trajectory.steps[-1].action.startswith("submit picoCTF{")
    assert trajectory.outcome == "solved"

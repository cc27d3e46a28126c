"""Values out of the scoring sandbox never fault the harness, hold its event loop or fill its memory.

The agent's module runs in the scoring runner's process, so it can replace the runner's value encoder
and send the host any bytes it likes. Whatever it sends, the host decodes it within bounds (size,
element count, depth, time), away from the event loop, and any failure is the agent's failed test
with the reason in the reward parts, never an env error that would take the episode out of the
denominator.
"""

from __future__ import annotations

import asyncio
import resource
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from intercode_agents import make_env
from intercode_agents.datasets import select_tasks
from intercode_agents.envs import Env
from intercode_agents.models.scripted import ScriptedChatModel
from intercode_agents.runner.config import EvalConfig
from intercode_agents.runner.eval import run_eval
from intercode_agents.runner.run_dir import read_records

# The runner's module is ``__main__`` in its process: a cell that assigns to it replaces the encoder.
FLOAT_PATCH = 'import sys\nsys.modules["__main__"].encode = lambda value: ["float", "0x1p99999"]\n'
COLLIDING = 30_000  # ints equal modulo 2**61 - 1 share one hash: a set of them is built in square time
SET_PATCH = (
    "import sys\n"
    f"_items = [['int', format(i * (2**61 - 1), 'x')] for i in range(1, {COLLIDING + 1})]\n"
    "sys.modules['__main__'].encode = lambda value: ['set', _items]\n"
)


class Ticker:
    """A coroutine that should run every 20 ms: the longest gap between its runs is how long the
    event loop was held."""

    def __init__(self) -> None:
        self.longest = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _tick(self) -> None:
        last = time.perf_counter()
        while True:
            await asyncio.sleep(0.02)
            now = time.perf_counter()
            self.longest = max(self.longest, now - last)
            last = now

    async def __aenter__(self) -> Ticker:
        self._task = asyncio.create_task(self._tick())
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()


@pytest.fixture(scope="module")
async def env() -> AsyncIterator[Env]:
    async with make_env("python", reward="strict", test_timeout=5, check_timeout=3) as env:
        yield env


def _tool_calling_model(cells: dict[str, str]) -> ScriptedChatModel:
    """A tool-calling model that runs the cell of the task whose question it reads, then submits."""
    questions = {task.query: task for task in select_tasks("python", "mini")}

    def reply(messages: list[BaseMessage]) -> AIMessage:
        question = next(m.text for m in messages if isinstance(m, HumanMessage))
        task = next(t for q, t in questions.items() if q in question)
        entry = task.meta["entry_point"]
        if not any(isinstance(m, ToolMessage) for m in messages):
            call = {"name": "run_python", "args": {"code": cells[task.id]}, "id": "run", "type": "tool_call"}
        else:
            call = {"name": "submit", "args": {"answer": entry}, "id": "submit", "type": "tool_call"}
        return AIMessage("", tool_calls=[call])

    return ScriptedChatModel([reply] * 100)


async def test_a_float_the_host_cannot_build_fails_the_agent_and_keeps_the_rate(tmp_path: Path) -> None:
    # python/mini/0 solved honestly, 1 and 2 wrong: 1 of 3. The wrong ones also replace the encoder
    # with one that sends a float too large for the host's float (0x1p99999): still 1 of 3.
    gold = {t.id: t.gold for t in select_tasks("python", "mini")}
    cells = {
        "python/mini/0": gold["python/mini/0"],
        "python/mini/1": FLOAT_PATCH + "def is_clean_palindrome(text):\n    return False\n",
        "python/mini/2": FLOAT_PATCH + "def count_vowels(text):\n    return 0\n",
    }
    out = tmp_path / "run"
    await run_eval(
        EvalConfig(
            env="python",
            strategy="tool_calling",
            model=_tool_calling_model(cells),
            selector="python/mini/0,python/mini/1,python/mini/2",
            turns=3,
            out_dir=out,
            progress=False,
            retry_errors=0,
        )
    )
    records, _ = read_records(out / "trajectories.jsonl")
    outcomes = {r.task_id: r.outcome for r in records}
    assert outcomes == {"python/mini/0": "solved", "python/mini/1": "failed", "python/mini/2": "failed"}
    for record in records:
        if record.task_id != "python/mini/0":
            assert record.reward == 0.0
            assert "0x1p99999" in str(record.reward_parts.get("refused_result"))


async def test_a_hash_colliding_set_never_holds_the_event_loop(env: Env) -> None:
    await env.reset(task_id="python/mini/0")
    await env.gym.step(SET_PATCH + "def second_largest(nums):\n    return 0\n")
    async with Ticker() as ticker:
        started = time.perf_counter()
        result = await env.evaluate("second_largest")
        took = time.perf_counter() - started
    assert result.reward == 0.0 and not result.corrupt
    assert "took longer than" in str(result.parts.get("refused_result"))
    assert ticker.longest < 1.0, f"the event loop was held for {ticker.longest:.1f} s"
    assert took < 60


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def test_a_huge_range_is_refused_without_growing_the_host(tmp_path: Path) -> None:
    # HumanEval/33's checks call tuple() on the result: a range of 4 million items would be 238 MB.
    async with make_env("python", reward="strict") as env:
        await env.reset(task_id="python/humaneval/33")
        await env.gym.step("def sort_third(l):\n    return range(4_000_000)\n")
        before = _peak_rss_mb()
        async with Ticker() as ticker:
            result = await env.evaluate("sort_third")
        grown = _peak_rss_mb() - before
    assert result.reward == 0.0 and not result.corrupt
    assert "too large" in str(result.parts.get("refused_result"))
    assert grown < 100, f"the host grew by {grown:.0f} MB"
    assert ticker.longest < 1.0, f"the event loop was held for {ticker.longest:.1f} s"


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ('["float", "0x1p99999"]', "0x1p99999"),
        ('["complex", "0x1p99999", "0x0p0"]', "0x1p99999"),
        ('functools.reduce(lambda v, _: ["list", [v]], range(300), ["none"])', "too deeply"),
        ('["int", "f" * (8 << 20)]', "too large"),
        ('["str", "x" * (8 << 20)]', "too large"),
        ('["list", [["none"]] * 400_000]', "too large"),
        ('["dict", [[["list", []], ["none"]]]]', "unhashable"),
        ('["fraction", "1", "-1"]', "denominator"),
        ('["set", [["float", "nan"]] * 3]', ""),
    ],
    ids=["float", "complex", "deep", "long-int", "long-str", "many", "unhashable", "fraction", "nan"],
)
async def test_any_value_the_runner_sends_is_a_scored_failure_with_its_reason(
    env: Env, value: str, why: str
) -> None:
    await env.reset(task_id="python/mini/0")
    cell = f"import functools, sys\n_value = {value}\nsys.modules['__main__'].encode = lambda v: _value\n"
    await env.gym.step(cell + "def second_largest(nums):\n    return 0\n")
    result = await env.evaluate("second_largest")
    assert result.reward == 0.0 and not result.corrupt
    assert result.parts["passed"] == 0
    assert why in str(result.parts.get("refused_result")), result.parts


async def test_a_forged_repl_answer_is_the_agents_observation_never_an_env_error(env: Env) -> None:
    # Code in the agent's own interpreter can write answers of any shape to the protocol stream,
    # for every request id it may be running under.
    forger = """
import json, os
for fd in map(int, os.listdir("/proc/self/fd")):
    for n in range(1, 200):
        try:
            line = json.dumps({"id": n, "ok": True, "output": {"x": [1]}, "error": [1]}) + "\\n"
            os.write(fd, line.encode())
        except OSError:
            pass
"""
    await env.reset(task_id="python/mini/0")
    observation, _, _, _, info = await env.gym.step(forger)
    assert info["errored"] and "[1]" in observation
    *_, info = await env.gym.step("print(6 * 7)")  # the episode goes on (its own forgeries answer it)
    assert info["action_type"] == "action"

"""The Python env: MBPP functions written in a persistent REPL and checked by the task's asserts.

The REPL is a JSON-lines helper in the sandbox that keeps its globals between steps; each episode
starts a new helper process (fresh globals) in a verified-pristine sandbox. ``submit NAME`` names the
agent's function; the task's tests run against it (aliased to the expected name when they differ), and
against the gold solution in its own pristine sandbox, each test under its own timeout.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from intercode_agents.datasets import Task, entry_point
from intercode_agents.datasets.sources import TaskSource
from intercode_agents.envs.base import ActionResult, TaskDetails
from intercode_agents.envs.pooled import PooledEnv
from intercode_agents.errors import DatasetError
from intercode_agents.rewards import RewardResult, TestOutcome, python_reward
from intercode_agents.sandbox import JsonSession, Sandbox

HELPER = ["python3", "/opt/intercode/pyrepl.py"]
TEST_TIMEOUT = 10.0
_DEF = re.compile(r"^def\s+([A-Za-z_]\w*)\s*\(", re.MULTILINE)
_GOLD_CACHE: dict[tuple[str, str], list[TestOutcome]] = {}  # (image id, task id) -> the gold's outcomes


def _outcomes(reply: dict[str, Any], n: int) -> list[TestOutcome]:
    results = reply.get("results") if reply.get("ok") else None
    if not isinstance(results, list) or len(results) != n:
        error = str(reply.get("error") or "the tests could not run")
        return [TestOutcome(passed=False, error=error, timed_out=bool(reply.get("timed_out")))] * n
    return [TestOutcome(bool(r.get("passed")), r.get("error"), bool(r.get("timed_out"))) for r in results]


def alias_line(submitted: str, expected: str | None) -> str:
    """Setup code that makes the tests' function name point at the agent's function."""
    name = submitted.strip().strip("`'\"").removesuffix("()").strip()
    if expected and name.isidentifier() and name != expected:
        return f"\n{expected} = {name}\n"
    return ""


class PythonEnv(PooledEnv):
    name = "python"
    language = "python"
    action_language = "python"
    default_image = "python"
    submit_takes_argument = True
    submit_description = (
        "Finish the task: submit the name of the function that solves it. The tests then run."
    )
    answer_description = "The name of the function that solves the task."

    @classmethod
    def task_details(
        cls, record: dict[str, Any], source: TaskSource, index: int, root: Path | None
    ) -> TaskDetails:
        """A Python task carries its tests, their setup code and the function they call."""
        where = f"task #{index} of split {source.env}/{source.split}"
        tests = record.get("tests")
        if not isinstance(tests, list) or not all(isinstance(t, str) for t in tests):
            raise DatasetError(f"{where} needs 'tests': a list of test code strings")
        entry = record.get("entry_point") or entry_point(str(record["gold"]), tests, where=where)
        meta = {
            "task_id": record.get("task_id", index),
            "tests": list(tests),
            "test_setup_code": str(record.get("test_setup_code") or ""),
            "entry_point": str(entry),
        }
        return TaskDetails(meta=meta)

    def default_submission(self) -> str:
        """The function the task's tests call."""
        return str(self.task.meta.get("entry_point") or "") if self.task is not None else ""

    def submission_candidate(self, actions: list[str], observations: list[str]) -> str | None:
        """The function the tests call, else the last function the agent defined."""
        if entry := self.default_submission():
            return entry
        names = [name for action in actions for name in _DEF.findall(action)]
        return names[-1] if names else ""

    @classmethod
    def gold_actions(cls, task: Task) -> list[str]:
        """Define the gold solution, then submit the function the tests call."""
        return [task.gold, f"submit {task.meta.get('entry_point') or ''}".rstrip()]

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.repl: JsonSession | None = None

    def task_prompt(self, task: Task) -> str:
        entry = task.meta.get("entry_point")
        if self.reward_mode == "strict" and entry:
            return f"{task.query}\nThe function must be named `{entry}`."
        return task.query

    async def _start_repl(self, sb: Sandbox) -> JsonSession:
        return await sb.json_session(HELPER, ready_timeout=60)

    async def _prepare(self, task: Task) -> None:
        sb = await self.take_sandbox(task.image)
        self.repl = await self._start_repl(sb)

    async def on_tool_mode(self) -> None:
        assert self.sandbox is not None
        self.repl = await self._start_repl(self.sandbox)

    async def _execute(self, action: str) -> ActionResult:
        await self.ensure_tool_mode()
        assert self.repl is not None
        reply = await self.repl.request(
            {"op": "exec", "code": action, "timeout": self.action_timeout, "max_output": 1 << 20},
            timeout=self.action_timeout,
        )
        output = str(reply.get("output") or "")
        error = reply.get("error")
        if error and error not in output:
            output = f"{output}{'' if not output or output.endswith(chr(10)) else chr(10)}{error}"
        if reply.get("timed_out"):
            output += f"\n[timed out after {self.action_timeout:g}s]"
        return ActionResult(
            observation=output,
            exit_code=0 if reply.get("ok") and not error else 1,
            errored=bool(error) or not reply.get("ok"),
            timed_out=bool(reply.get("timed_out")),
            output_truncated=bool(reply.get("truncated")),
        )

    async def _run_tests(self, repl: JsonSession, task: Task, extra_setup: str = "") -> list[TestOutcome]:
        tests = list(task.meta.get("tests") or [])
        setup = str(task.meta.get("test_setup_code") or "") + extra_setup
        reply = await repl.request(
            {"op": "run_tests", "setup": setup, "tests": tests, "timeout": TEST_TIMEOUT},
            timeout=TEST_TIMEOUT * (len(tests) + 1),
        )
        return _outcomes(reply, len(tests))

    async def _gold(self, task: Task) -> list[TestOutcome]:
        """The tests' outcomes for the gold solution, in a pristine sandbox (cached per process)."""
        key = (getattr(self.sandbox, "image_id", None) or task.image, task.id)
        if key not in _GOLD_CACHE:
            sb, pool = await self.borrow(task.image, trusted=True)
            try:
                repl = await self._start_repl(sb)
                await repl.request({"op": "exec", "code": task.gold, "timeout": 60}, timeout=60)
                _GOLD_CACHE[key] = await self._run_tests(repl, task)
            finally:
                await pool.release(sb)
        return _GOLD_CACHE[key]

    async def _score(self, submission: str) -> RewardResult:
        task = self._require_task()
        assert self.repl is not None
        tests = list(task.meta.get("tests") or [])
        agent = await self._run_tests(self.repl, task, alias_line(submission, task.meta.get("entry_point")))
        return python_reward(tests, agent, await self._gold(task), self.reward_mode)

    async def close(self) -> None:
        self.repl = None
        await super().close()

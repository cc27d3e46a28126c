"""The Python env: MBPP functions written in a persistent REPL and checked by the task's asserts.

The REPL is a JSON-lines helper in the sandbox that keeps its globals between steps; each episode
starts a new helper process (fresh globals) in a pristine sandbox. The env keeps the source of every
cell the agent ran (and where it stopped, when it raised), which is what scoring uses: ``submit NAME``
names the agent's function, and the task's tests run against it (aliased to the expected name when
they differ) in a sandbox of their own, never in the agent's REPL (see
:mod:`~intercode_agents.envs.python.scorer`), and against the gold solution in another.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from intercode_agents.datasets import Task
from intercode_agents.datasets.sources import TaskSource
from intercode_agents.datasets.task import TaskDetails
from intercode_agents.envs.base import ActionResult
from intercode_agents.envs.pooled_env import PooledEnv
from intercode_agents.envs.python.asserts import UnsplittableTest
from intercode_agents.envs.python.check_tests import split_check_function
from intercode_agents.envs.python.checker import CheckProcess
from intercode_agents.envs.python.reward import AGENT_PARTS, python_reward
from intercode_agents.envs.python.scorer import AssertScorer, Cell, Program, TestRun
from intercode_agents.envs.python.tasks import entry_point
from intercode_agents.errors import ConfigError, DatasetError
from intercode_agents.reward import RewardResult
from intercode_agents.sandbox import JsonSession, Sandbox
from intercode_agents.sandbox.cancelling import cancel_and_wait

HELPER = ["python3", "/opt/intercode/pyrepl.py"]
# The name the original bound the submitted function to: the first "def NAME(" anywhere in the gold,
# its parenthesis right after the name (so a helper written "def helper (x):" is passed over).
_FIRST_DEF = re.compile(r"def (\w+)\(")
_GOLD_CACHE: dict[tuple[str, str], list[TestRun]] = {}  # (image id, task id) -> the gold's probe results
_DEF = re.compile(r"^def\s+([A-Za-z_]\w*)\s*\(", re.MULTILINE)  # a definition at the top level


def alias_line(submitted: str, expected: str | None) -> str:
    """Setup code that makes the tests' function name point at the agent's function."""
    name = submitted.strip().strip("`'\"").removesuffix("()").strip()
    if expected and name.isidentifier() and name != expected:
        return f"\n{expected} = {name}\n"
    return ""


def _text(value: Any) -> str | None:
    """A text field of the REPL's answer. Code run in the REPL can write answers of its own to the
    protocol stream, of any shape: they are the agent's observation, never the harness's fault."""
    if value is None or isinstance(value, str):
        return value
    return repr(value)


def _stop_line(reply: dict[str, Any]) -> int | None:
    line = reply.get("stopped_at_line")
    return line if isinstance(line, int) and not isinstance(line, bool) else None


class PythonEnv(PooledEnv):
    name = "python"
    language = "python"
    action_language = "python"
    default_image = "python"
    submit_takes_argument = True
    agent_parts = AGENT_PARTS
    # "paper": scored as the original InterCode scored, for comparisons with the paper's table. It
    # bound the gold's first ``def`` (sometimes a helper) to the submitted function, and after every
    # scoring it reset the agent's own interpreter and loaded the test setup and the gold into it, so
    # the gold's definitions stood in for the agent's earlier ones in later scorings. Here that
    # history is replayed in the scoring sandbox only: the agent's REPL never sees the gold.
    execution_modes = ("session", "paper")
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
        setup = str(record.get("test_setup_code") or "")
        host_code = ""
        if source.options.get("tests") == "check_function":  # HumanEval's style: def check(candidate)
            if len(tests) != 1:
                raise DatasetError(f"{where}: a check-function task has one block of test code")
            prompt = str(record.get("prompt") or "")
            split = split_check_function(tests[0], str(entry), prompt=prompt, where=where)
            setup = "\n".join(part for part in (setup, split.setup) if part)
            tests, host_code = split.tests, split.host_code
        meta = {
            "task_id": record.get("task_id", index),
            "tests": list(tests),
            "test_setup_code": setup,
            "entry_point": str(entry),
        }
        if host_code:
            meta["host_code"] = host_code  # the task's own helpers, evaluated by the scorer (never the agent)
        return TaskDetails(meta=meta, public={"entry_point": str(entry)})

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

    def __init__(
        self,
        *,
        test_timeout: float = 10.0,
        load_timeout: float = 60.0,
        check_timeout: float = 10.0,
        **kw: Any,
    ) -> None:
        """``check_timeout``: seconds the scorer gives itself to read one test's results and compare
        them with the expected values (an honest result takes milliseconds)."""
        super().__init__(**kw)
        if min(test_timeout, load_timeout, check_timeout) <= 0:
            raise ConfigError(
                "test_timeout, load_timeout and check_timeout must be positive, got "
                f"{test_timeout}, {load_timeout}, {check_timeout}"
            )
        self.test_timeout = test_timeout
        self.load_timeout = load_timeout
        self.check_timeout = check_timeout
        self.repl: JsonSession | None = None
        self.cells: list[Cell] = []  # what the current REPL process ran, in order

    def task_prompt(self, task: Task) -> str:
        entry = task.meta.get("entry_point")
        if self.reward_mode == "strict" and entry:
            return f"{task.query}\nThe function must be named `{entry}`."
        return task.query

    async def _start_repl(self, sb: Sandbox) -> JsonSession:
        self.cells = []
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
        if reply.get("restarted"):
            self.cells = []  # a new helper process: the globals the cells made are gone
        else:
            self.cells.append(Cell(action, _stop_line(reply) if reply.get("error") else None))
        output = _text(reply.get("output")) or ""
        error = _text(reply.get("error"))
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

    def _scorer(self, task: Task) -> AssertScorer:
        entry = task.meta.get("entry_point")
        if not entry:
            raise ConfigError(f"task {task.id} names no entry point, so its tests cannot be scored")
        tests = list(task.meta.get("tests") or [])
        return AssertScorer(
            tests,
            str(entry),
            host_code=str(task.meta.get("host_code") or ""),
            test_timeout=self.test_timeout,
            load_timeout=self.load_timeout,
            check_timeout=self.check_timeout,
        )

    async def _run(
        self, task: Task, scorer: AssertScorer, checker: CheckProcess, program: Program, *, trusted: bool
    ) -> list[TestRun]:
        """Run ``program``'s probes in a pristine sandbox of its own: for the agent's code, one
        nobody used (removed afterwards); for the gold's, one no agent touched (recycled for the
        harness only when it matches its fresh fingerprint)."""
        sb, pool = await self.borrow(task.image, trusted=trusted)
        try:
            return await scorer.run(sb, program, checker, None if trusted else "agent")
        finally:
            await pool.release(sb, dirty=not trusted)

    async def _gold(self, task: Task, scorer: AssertScorer, checker: CheckProcess) -> list[TestRun]:
        """Every probe's result for the gold solution (cached per process)."""
        key = (getattr(self.sandbox, "image_id", None) or task.image, task.id)
        if key not in _GOLD_CACHE:
            setup = str(task.meta.get("test_setup_code") or "")
            program = Program((Cell(task.gold),), setup, whole=True)
            _GOLD_CACHE[key] = await self._run(task, scorer, checker, program, trusted=True)
        return _GOLD_CACHE[key]

    async def _score(self, submission: str) -> RewardResult:
        task = self._require_task()
        tests = list(task.meta.get("tests") or [])
        try:
            scorer = self._scorer(task)
        except UnsplittableTest as exc:
            note = f"a test cannot be scored out of the agent's reach, so the task is unscored: {exc}"
            return RewardResult(0.0, {"tests": len(tests), "unsplittable": str(exc)}, corrupt=True, note=note)
        test_setup = str(task.meta.get("test_setup_code") or "")
        if self.execution == "paper":
            first = _FIRST_DEF.search(task.gold)
            alias = Cell(alias_line(submission, first.group(1) if first else None))  # may fail alone
            # The original then reset the interpreter and loaded the setup and the gold into it to
            # run the gold's tests: the agent's later cells ran on top of the gold's definitions.
            program = Program((*self.cells, alias), test_setup)
            self.cells = [Cell(test_setup), Cell(task.gold)]
        else:
            program = Program(
                tuple(self.cells), test_setup + alias_line(submission, task.meta.get("entry_point"))
            )
        async with scorer.checker() as checker:
            gold = asyncio.ensure_future(self._gold(task, scorer, checker))  # both sandboxes work at once
            try:
                agent_runs = await self._run(task, scorer, checker, program, trusted=False)
                gold_runs = await gold
            finally:
                if not gold.done():
                    await cancel_and_wait(gold)
            agent_outcomes, gold_outcomes = await scorer.outcomes(agent_runs, gold_runs, checker)
        return python_reward(tests, agent_outcomes, gold_outcomes, self.reward_mode)

    async def close(self) -> None:
        self.repl = None
        self.cells = []
        await super().close()

"""Tests written as a ``check(candidate)`` function (HumanEval's style), as the scorer takes them.

The Python env scores a task's tests out of the agent's reach, one ``assert`` statement at a time
(:mod:`intercode_agents.envs.python.asserts`). A HumanEval task's tests are instead one block of
code: top-level set-up (``METADATA = {...}``, imports, helpers) and ``def check(candidate):`` whose
body holds the asserts, called as ``check(entry_point)``. This module cuts such a block into its
set-up code and its asserts, with ``candidate`` renamed to the entry point.

A check whose body holds more than asserts (a loop over random inputs, local variables) is unrolled
by :mod:`~intercode_agents.envs.python.check_unroll` in an isolated interpreter: every assert it
reaches, written out with literal arguments, plus the code that defines on the scorer's side the
task's helpers an assert applies to the candidate's result. A check that cannot be unrolled is kept
whole as one test, which the scorer cannot split: that task is then listed as corrupt rather than
scored unsafely.
"""

from __future__ import annotations

import ast
import functools
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from intercode_agents.errors import DatasetError

UNROLLER = Path(__file__).with_name("check_unroll.py")
UNROLL_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class CheckTests:
    setup: str  # the test block's top-level set-up code
    tests: list[str]  # one statement per test
    host_code: str = ""  # defines the helpers the scorer evaluates on its own side ("" when none)


class _Rename(ast.NodeTransformer):
    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new

    def visit_Name(self, node: ast.Name) -> ast.Name:
        return ast.Name(self.new, node.ctx) if node.id == self.old else node


def split_check_function(code: str, entry_point: str, *, prompt: str = "", where: str = "task") -> CheckTests:
    """The set-up code and one test statement per assert of a ``check(candidate)`` test block;
    ``prompt`` is the task's trusted code that the check may call (HumanEval's helper functions)."""
    try:
        module = ast.parse(code)
    except SyntaxError as exc:
        raise DatasetError(f"{where}: its test code does not parse: {exc}") from exc
    checks = [n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == "check"]
    if len(checks) != 1 or len(checks[0].args.args) != 1:
        raise DatasetError(f"{where}: its tests need one 'def check(candidate):' function")
    check = checks[0]
    setup = [
        n
        for n in module.body
        if n is not check and not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Call))
    ]
    body = [s for s in check.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    setup_code = "\n".join(ast.unparse(n) for n in setup)
    if body and all(isinstance(s, ast.Assert) for s in body):
        rename = _Rename(check.args.args[0].arg, entry_point)
        return CheckTests(setup_code, [ast.unparse(rename.visit(statement)) for statement in body])
    unrolled = _unroll(code, entry_point, prompt)
    tests = unrolled.get("tests")
    if not isinstance(tests, list) or not tests:
        return CheckTests(
            setup_code, [f"{code.rstrip()}\ncheck({entry_point})"]
        )  # whole: the scorer refuses it
    return CheckTests(setup_code, list(tests), str(unrolled.get("host_code") or ""))


@functools.lru_cache(maxsize=256)
def _unroll(code: str, entry_point: str, prompt: str) -> dict[str, object]:
    """What the unroller says for one check (its tests, or an error), once per process."""
    request = json.dumps({"code": code, "entry_point": entry_point, "prompt": prompt})
    try:
        done = subprocess.run(
            [sys.executable, "-I", str(UNROLLER)],
            input=request,
            capture_output=True,
            text=True,
            timeout=UNROLL_TIMEOUT_S,
            check=False,
        )
        answer = json.loads(done.stdout)
    except (subprocess.TimeoutExpired, json.JSONDecodeError) as exc:
        return {"error": f"the check could not be unrolled: {type(exc).__name__}"}
    return answer if isinstance(answer, dict) else {"error": "the unroller gave no answer"}

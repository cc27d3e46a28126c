"""Tests written as a ``check(candidate)`` function (HumanEval's style), as the scorer takes them.

The Python env scores a task's tests out of the agent's reach, one ``assert`` statement at a time
(:mod:`intercode_agents.rewards.python_asserts`). A HumanEval task's tests are instead one block of
code: top-level set-up (``METADATA = {...}``, imports, helpers) and ``def check(candidate):`` whose
body holds the asserts, called as ``check(entry_point)``. This module cuts such a block into its
set-up code and its asserts, with ``candidate`` renamed to the entry point. A check whose body holds
anything but asserts (a loop over random inputs, a local variable) is kept whole as one test, which
the scorer cannot split: that task is then listed as corrupt rather than scored unsafely.
"""

from __future__ import annotations

import ast

from intercode_agents.errors import DatasetError


class _Rename(ast.NodeTransformer):
    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new

    def visit_Name(self, node: ast.Name) -> ast.Name:
        return ast.Name(self.new, node.ctx) if node.id == self.old else node


def split_check_function(code: str, entry_point: str, *, where: str = "task") -> tuple[str, list[str]]:
    """(set-up code, one test statement per assert) of a ``check(candidate)`` test block."""
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
    if not body or not all(isinstance(s, ast.Assert) for s in body):
        return setup_code, [f"{code.rstrip()}\ncheck({entry_point})"]  # whole: the scorer refuses it
    rename = _Rename(check.args.args[0].arg, entry_point)
    return setup_code, [ast.unparse(rename.visit(statement)) for statement in body]

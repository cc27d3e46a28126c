"""Unroll a ``check(candidate)`` function into plain asserts (run as a script, standard library only).

:mod:`intercode_agents.envs.python.check_tests` starts this file in an isolated interpreter
(``python -I``) at task-load time, for a check whose body holds more than asserts: loops over
generated inputs, local variables, a stray ``print``. It reads ``{"code", "entry_point", "prompt"}``
as JSON on stdin and runs the task's own trusted code (the prompt's helpers, the test block's set-up
and the check itself, with ``random`` seeded so that every load gives the same tests) with
``candidate`` bound to a recorder: a call returns a placeholder and no assert is evaluated. Each
assert the check reaches is written out instead, with:

- every call of ``candidate`` replaced by a call of the entry point on the argument values the check
  computed, as literals;
- every other local of the check replaced by its value as a literal (a placeholder becomes the call
  that made it);
- the check's imported modules and the prompt's helper functions left as names, defined by the
  ``host_code`` it also writes out, so that the scorer evaluates them on its own side, never in the
  agent's sandbox (where the agent could redefine a helper).

It prints ``{"tests": [...], "host_code": "..."}``, or ``{"error": ...}`` when a value has no
literal form or the check does something else it cannot write out.
"""

from __future__ import annotations

import ast
import json
import random
import sys
import types
from typing import Any


class Unrollable(Exception):
    pass


class Pending:
    """What a recorded call of the candidate returned: the call itself, to be written out."""

    def __init__(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.args, self.kwargs = args, kwargs

    def __getattr__(self, name: str) -> Any:
        raise Unrollable(f"the check uses the candidate's result ({name}) outside an assert")


def literal(value: Any, entry_point: str) -> ast.expr:
    if isinstance(value, Pending):
        return call(entry_point, value.args, value.kwargs)
    text = repr(value)
    try:
        same = type(ast.literal_eval(text)) is type(value) and ast.literal_eval(text) == value
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        same = False
    if not same:
        raise Unrollable(f"a value of type {type(value).__name__} has no literal form: {text[:80]}")
    return ast.parse(text, mode="eval").body


def call(entry_point: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> ast.Call:
    return ast.Call(
        func=ast.Name(entry_point, ast.Load()),
        args=[literal(a, entry_point) for a in args],
        keywords=[ast.keyword(k, literal(v, entry_point)) for k, v in kwargs.items()],
    )


class Substitute(ast.NodeTransformer):
    """One reached assert written out: candidate calls and the check's locals become literals."""

    def __init__(self, entry_point: str, candidate: str, scope: dict[str, Any], calls: list[Any]) -> None:
        self.entry_point, self.candidate = entry_point, candidate
        self.scope, self.calls = scope, iter(calls)
        self.modules: dict[str, str] = {}  # local name: module name

    def visit_Call(self, node: ast.Call) -> ast.AST:
        if isinstance(node.func, ast.Name) and node.func.id == self.candidate:
            args, kwargs = next(self.calls)
            return call(self.entry_point, tuple(args), kwargs)
        return self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> ast.expr:
        if node.id == self.candidate:
            raise Unrollable("the assert uses the candidate other than by calling it")
        if node.id not in self.scope:
            return node  # a global of the task's code, or a built-in
        value = self.scope[node.id]
        if isinstance(value, types.ModuleType):
            self.modules[node.id] = value.__name__
            return node
        return literal(value, self.entry_point)


class Instrument(ast.NodeTransformer):
    """Each assert of the check becomes ``__record__(index, locals(), [candidate call arguments])``."""

    def __init__(self, candidate: str) -> None:
        self.candidate = candidate
        self.asserts: list[ast.Assert] = []

    def visit_Assert(self, node: ast.Assert) -> ast.stmt:
        calls: list[ast.expr] = []
        for n in ast.walk(node):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == self.candidate:
                if any(isinstance(a, ast.Starred) for a in n.args) or any(k.arg is None for k in n.keywords):
                    raise Unrollable("a candidate call with * or ** arguments")
                inner = [m for a in [*n.args, *n.keywords] for m in ast.walk(a)]
                if any(isinstance(m, ast.Name) and m.id == self.candidate for m in inner):
                    raise Unrollable("a candidate call inside a candidate call's arguments")
                kwargs = ast.Dict([ast.Constant(k.arg) for k in n.keywords], [k.value for k in n.keywords])
                calls.append(ast.Tuple([ast.List(list(n.args), ast.Load()), kwargs], ast.Load()))
        index = len(self.asserts)
        self.asserts.append(node)
        record = ast.Call(
            func=ast.Name("__record__", ast.Load()),
            args=[
                ast.Constant(index),
                ast.Call(ast.Name("locals", ast.Load()), [], []),
                ast.List(calls, ast.Load()),
            ],
            keywords=[],
        )
        return ast.copy_location(ast.Expr(record), node)


def unroll(code: str, entry_point: str, prompt: str) -> dict[str, Any]:
    module = ast.parse(code)
    check = next(n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == "check")
    candidate = check.args.args[0].arg
    instrument = Instrument(candidate)
    check.body = [instrument.visit(s) for s in check.body]
    tests: list[str] = []
    modules: dict[str, str] = {}

    def record(index: int, scope: dict[str, Any], calls: list[Any]) -> None:
        scope = {k: v for k, v in scope.items() if k != candidate}
        substitute = Substitute(entry_point, candidate, scope, calls)
        statement = substitute.visit(ast.parse(ast.unparse(instrument.asserts[index])).body[0])
        modules.update(substitute.modules)
        tests.append(ast.unparse(ast.fix_missing_locations(statement)))

    namespace: dict[str, Any] = {"__name__": "__check__", "__record__": record}
    random.seed(0)
    exec(compile(prompt, "<prompt>", "exec"), namespace)
    helpers = sorted(
        n.name for n in ast.parse(prompt).body if isinstance(n, ast.FunctionDef) and n.name != entry_point
    )
    body = [n for n in module.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Call))]
    exec(compile(ast.fix_missing_locations(ast.Module(body, [])), "<check>", "exec"), namespace)
    namespace["check"](lambda *args, **kwargs: Pending(args, kwargs))
    used = {n.id for t in tests for n in ast.walk(ast.parse(t)) if isinstance(n, ast.Name)}
    return {"tests": tests, "host_code": host_code(prompt, set(helpers) & used, modules)}


def host_code(prompt: str, helpers: set[str], modules: dict[str, str]) -> str:
    """The code that defines, on the scorer's side, the helpers and modules the asserts name: the
    prompt's imports and those helpers' definitions, and an import per module the check imported."""
    if not helpers and not modules:
        return ""
    tree = ast.parse(prompt).body
    kept: list[ast.stmt] = [n for n in tree if isinstance(n, ast.Import | ast.ImportFrom)]
    kept += [n for n in tree if isinstance(n, ast.FunctionDef) and n.name in helpers]
    lines = [ast.unparse(n) for n in kept]
    lines += [f"import {module} as {name}" for name, module in sorted(modules.items())]
    return "\n".join(lines)


def main() -> None:
    request = json.load(sys.stdin)
    try:
        answer = unroll(request["code"], request["entry_point"], request.get("prompt") or "")
    except (Unrollable, StopIteration) as exc:
        answer = {"error": str(exc) or type(exc).__name__}
    except Exception as exc:  # the task's own code failed: the task stays unscored
        answer = {"error": f"{type(exc).__name__}: {exc}"}
    json.dump(answer, sys.stdout)


if __name__ == "__main__":
    main()

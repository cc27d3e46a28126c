"""The scoring runner: rebuilds a submission in a fresh process and evaluates the calls of its tests,
answering with plain, type-tagged values (stdlib only).

The scorer starts one runner per scoring, in a sandbox where no agent action ever ran. The runner
never sees a test's assert, its comparison or its expected value: only the calls to evaluate (the
agent's function on the test's arguments), so whatever the code under test does here, it can only
choose which plain values come back. The comparison happens on the scorer's side.

Ops (every request may carry "id", echoed back):
  {"op": "load", "cells": [{"code", "stop_line"}], "whole": bool, "setup": str,
   "timeout": s, "setup_timeout": s}
      -> {"ok", "statements", "errors", "error_count", "timed_out", "setup_error"}
  {"op": "probe", "exprs": [str], "timeout": s}
      -> {"ok", "loaded", "results": [{"value": tagged} | {"error": str, "timed_out": bool}]}
  {"op": "ping"} -> {"ok": true}

``load`` runs the cells in one fresh namespace (``__name__ == "__main__"``), each statement on its
own, so one that fails is skipped and the rest still run. With ``whole`` (the gold) a cell runs as it
is, as the REPL would run it. Otherwise only a cell's definitions run: ``def``, ``class``, imports,
assignments, ``del``, ``global``, and ``if``/``try``/``with`` blocks (but not ``if __name__ ==
"__main__":``); expression statements (calls, prints), asserts and loops are what a REPL user runs to
look at things, and are left out. A cell runs up to the statement at ``stop_line`` (the one that
raised when the agent ran it), exclusive. Then ``setup`` runs as one cell (its error is
``setup_error``). ``probe`` evaluates each expression in that namespace, in order, under one deadline.
All output of the code under test goes to /dev/null.
"""

from __future__ import annotations
import __future__

import ast
import builtins
import linecache
import os
import sys
from typing import Any

from jsonl_protocol import Channel, Request, RequestError, Response, get_timeout, serve
from pyrepl_capture import ExecTimeout, error_line, run_with_deadline
from pyscore_values import encode

MAX_ERRORS = 5
# The REPL compiles cells with its own module's future features (annotations are not evaluated), so
# the rebuilt program, the setup and the probes are compiled alike.
REPL_FLAGS = __future__.annotations.compiler_flag
_TRY_STAR = getattr(ast, "TryStar", ast.Try)
_DEFINITIONS = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Import,
    ast.ImportFrom,
    ast.Assign,
    ast.AugAssign,
    ast.AnnAssign,
    ast.Delete,
    ast.Global,
    ast.If,
    ast.Try,
    _TRY_STAR,
    ast.With,
    ast.AsyncWith,
)


def _is_main_guard(stmt: ast.stmt) -> bool:
    test = stmt.test if isinstance(stmt, ast.If) else None
    if not isinstance(test, ast.Compare) or len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
        return False
    sides = [test.left, test.comparators[0]]
    names = [s.id for s in sides if isinstance(s, ast.Name)]
    texts = [s.value for s in sides if isinstance(s, ast.Constant)]
    return names == ["__name__"] and texts == ["__main__"]


def definitions(tree: ast.Module, stop_line: int | None) -> list[ast.stmt]:
    """The top-level statements of a cell that the rebuilt program keeps (see the module docstring)."""
    kept = []
    for stmt in tree.body:
        if stop_line is not None and (stmt.end_lineno or stmt.lineno) >= stop_line:
            break
        if isinstance(stmt, _DEFINITIONS) and not _is_main_guard(stmt):
            kept.append(stmt)
    return kept


def _future_flags(statements: list[ast.stmt]) -> int:
    flags = 0
    for stmt in statements:
        if isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__":
            for alias in stmt.names:
                feature = getattr(__future__, alias.name, None)
                flags |= getattr(feature, "compiler_flag", 0)
    return flags


class Runner:
    def __init__(self) -> None:
        self.namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
        self.loaded = False

    def _units(self, source: str, name: str, stop_line: int | None, whole: bool) -> list[ast.Module]:
        try:
            tree = ast.parse(source, name, "exec")
            compile(tree, name, "exec", REPL_FLAGS, dont_inherit=True)  # as the REPL compiled it
        except (SyntaxError, ValueError):
            return []  # the cell never compiled, so it never ran
        linecache.cache[name] = (len(source), None, source.splitlines(keepends=True), name)
        if whole:
            return [tree]
        return [ast.Module(body=[stmt], type_ignores=[]) for stmt in definitions(tree, stop_line)]

    def op_load(self, req: Request) -> Response:
        cells = req.get("cells")
        if not isinstance(cells, list) or not all(isinstance(c, dict) for c in cells):
            raise RequestError("'cells' must be a list of objects")
        setup = req.get("setup") or ""
        if not isinstance(setup, str):
            raise RequestError("'setup' must be a string")
        whole = bool(req.get("whole"))
        timeout = get_timeout(req, 60.0)
        setup_timeout = get_timeout({"timeout": req.get("setup_timeout", 10.0)}, 10.0)  # same bounds
        for cell in cells:
            if not isinstance(cell.get("code"), str):
                raise RequestError("every cell needs 'code' as a string")
        errors: list[str] = []
        kept = 0

        def body() -> None:
            nonlocal kept
            for number, cell in enumerate(cells, 1):
                code, stop = cell["code"], cell.get("stop_line")
                stop = stop if isinstance(stop, int) and not isinstance(stop, bool) else None
                name = f"<cell {number}>"
                units = self._units(code, name, stop, whole)
                flags = REPL_FLAGS | _future_flags([s for unit in units for s in unit.body])
                for unit in units:
                    kept += len(unit.body)
                    try:
                        exec(compile(unit, name, "exec", flags, dont_inherit=True), self.namespace)
                    except ExecTimeout:
                        raise
                    except BaseException as exc:  # SystemExit too: the rest of the program still runs
                        errors.append(error_line(exc))

        stopped = run_with_deadline(body, timeout)
        if stopped is not None:
            errors.append(f"TimeoutError: timed out after {timeout:g} s")
        setup_error = self._setup(setup, setup_timeout) if setup.strip() else None
        self.loaded = True
        return {
            "ok": True,
            "statements": kept,
            "errors": errors[:MAX_ERRORS],
            "error_count": len(errors),
            "timed_out": stopped is not None,
            "setup_error": setup_error,
        }

    def _setup(self, source: str, timeout: float) -> str | None:
        error: list[str] = []

        def body() -> None:
            try:
                exec(compile(source, "<setup>", "exec", REPL_FLAGS, dont_inherit=True), self.namespace)
            except ExecTimeout:
                raise
            except BaseException as exc:
                error.append(error_line(exc))

        if run_with_deadline(body, timeout) is not None:
            return f"TimeoutError: timed out after {timeout:g} s"
        return error[0] if error else None

    def op_probe(self, req: Request) -> Response:
        exprs = req.get("exprs")
        if not isinstance(exprs, list) or not all(isinstance(e, str) for e in exprs):
            raise RequestError("'exprs' must be a list of strings")
        timeout = get_timeout(req, 10.0)
        results: list[dict[str, Any]] = []

        def body() -> None:
            for expr in exprs:
                try:
                    code = compile(expr, "<probe>", "eval", REPL_FLAGS, dont_inherit=True)
                    value = eval(code, self.namespace)
                    results.append({"value": encode(value)})
                except ExecTimeout:
                    raise
                except BaseException as exc:
                    results.append({"error": error_line(exc), "timed_out": False})

        if run_with_deadline(body, timeout) is not None:
            results.append({"error": f"TimeoutError: timed out after {timeout:g} s", "timed_out": True})
        return {"ok": True, "loaded": self.loaded, "results": results}


def main() -> int:
    devnull = os.open(os.devnull, os.O_RDWR)
    channel = Channel(stray_output_fd=devnull)
    os.dup2(devnull, 2)
    os.close(devnull)
    runner = Runner()
    handlers = {"load": runner.op_load, "probe": runner.op_probe, "ping": lambda req: {"ok": True}}
    version = ".".join(map(str, sys.version_info[:3]))
    channel.send({"ready": True, "helper": "pyscore", "python": version})
    return serve(channel, handlers)


if __name__ == "__main__":
    sys.exit(main())

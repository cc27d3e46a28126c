"""A persistent Python REPL speaking JSON lines on stdin/stdout (stdlib only).

Ops (every request may carry "id", echoed back):
  {"op": "exec", "code", "timeout", "max_output"} -> {"ok", "output", "error", "timed_out", "truncated",
                                                     "stopped_at_line"}
  {"op": "eval", "expr", "timeout"}               -> {"ok", "value", "error", "timed_out"}
  {"op": "reset"} -> fresh globals;  {"op": "ping"} -> {"ok": true}

``stopped_at_line`` is the line of the cell's top-level statement that raised (or was running at the
deadline), or null when every statement ran. The env keeps each cell's source with it, so that
scoring can rebuild the agent's definitions elsewhere: tests never run in this process.
"""

from __future__ import annotations

import ast
import builtins
import itertools
import linecache
import sys
import traceback
from types import CodeType, TracebackType
from typing import Any

from jsonl_protocol import (
    Channel,
    Request,
    RequestError,
    Response,
    get_positive_int,
    get_str,
    get_timeout,
    serve,
)
from pyrepl_capture import Capture, FdForwarder, run_with_deadline

DEFAULT_TIMEOUT_S = 30.0
DEFAULT_MAX_OUTPUT = 65536
EVAL_OUTPUT_LIMIT = 4096
MAX_VALUE_CHARS = 1_000_000
CELL_PREFIX = "<cell "


def fresh_globals() -> dict[str, Any]:
    return {"__name__": "__main__", "__builtins__": builtins}


class Outcome:
    """What running one piece of user code produced."""

    def __init__(self) -> None:
        self.error: str | None = None
        self.traceback_text = ""
        self.timed_out = False
        self.value: Any = None
        self.stopped_at_line: int | None = None


def _user_frames(tb: TracebackType | None) -> TracebackType | None:
    """Drop the helper's own frames from the top of a traceback."""
    while tb is not None and not tb.tb_frame.f_code.co_filename.startswith(CELL_PREFIX):
        tb = tb.tb_next
    return tb


def _cell_line(tb: TracebackType | None, cell: str) -> int | None:
    """The line the cell's own top-level code was at in a traceback (None: it was not running)."""
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename == cell and code.co_name == "<module>":
            return tb.tb_lineno
        tb = tb.tb_next
    return None


class Repl:
    def __init__(self, forwarder: FdForwarder) -> None:
        self.forwarder = forwarder
        self.globals = fresh_globals()
        self._cells = itertools.count(1)

    def _compile(self, source: str, name: str) -> tuple[CodeType, CodeType | None]:
        """Compile a cell; when it ends in an expression, that expression is compiled apart to echo it."""
        linecache.cache[name] = (len(source), None, source.splitlines(keepends=True), name)
        tree = ast.parse(source, name, "exec")
        last: CodeType | None = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            expr = ast.Expression(tree.body.pop().value)
            last = compile(expr, name, "eval")
        return compile(tree, name, "exec"), last

    def _run(
        self, source: str, namespace: dict[str, Any], timeout: float, sink: Capture, echo: bool
    ) -> Outcome:
        outcome = Outcome()
        cell = f"{CELL_PREFIX}{next(self._cells)}>"
        self.forwarder.set_sink(sink)

        def body() -> None:
            code, last = self._compile(source, cell)
            exec(code, namespace)
            if last is not None:
                outcome.value = eval(last, namespace)
                if echo and outcome.value is not None:
                    print(repr(outcome.value))

        try:
            stopped = run_with_deadline(body, timeout)
            if stopped is not None:
                outcome.timed_out = True
                outcome.stopped_at_line = _cell_line(stopped.__traceback__, cell)
        except BaseException as exc:
            lines = traceback.format_exception(type(exc), exc, _user_frames(exc.__traceback__))
            outcome.traceback_text = "".join(lines)
            outcome.error = lines[-1].strip() if lines else type(exc).__name__
            outcome.stopped_at_line = _cell_line(exc.__traceback__, cell)
        finally:
            self.forwarder.sync()
            self.forwarder.set_sink(None)
            sys.stdout = sys.stderr = self.forwarder.stream
        if outcome.timed_out:
            outcome.error = f"TimeoutError: timed out after {timeout:g} s"
            outcome.traceback_text = outcome.error + "\n"
        return outcome

    def op_exec(self, req: Request) -> Response:
        code = get_str(req, "code")
        timeout = get_timeout(req, DEFAULT_TIMEOUT_S)
        sink = Capture(get_positive_int(req, "max_output", DEFAULT_MAX_OUTPUT))
        outcome = self._run(code, self.globals, timeout, sink, echo=True)
        if outcome.traceback_text:
            sink.write(outcome.traceback_text)
        return {
            "ok": outcome.error is None,
            "output": sink.text(),
            "error": outcome.error,
            "timed_out": outcome.timed_out,
            "truncated": sink.truncated,
            "stopped_at_line": outcome.stopped_at_line,
        }

    def op_eval(self, req: Request) -> Response:
        expr = get_str(req, "expr")
        try:
            ast.parse(expr, "<expr>", "eval")
        except SyntaxError as exc:
            raise RequestError(f"'expr' is not a single expression: {exc.msg}") from None
        timeout = get_timeout(req, DEFAULT_TIMEOUT_S)
        # repr() runs under the same deadline: a __repr__ can loop too.
        source = f"repr(({expr}\n))"
        outcome = self._run(source, self.globals, timeout, Capture(EVAL_OUTPUT_LIMIT), echo=False)
        value = outcome.value if outcome.error is None and isinstance(outcome.value, str) else None
        return {
            "ok": outcome.error is None,
            "value": value[:MAX_VALUE_CHARS] if value is not None else None,
            "truncated": value is not None and len(value) > MAX_VALUE_CHARS,
            "error": outcome.error,
            "timed_out": outcome.timed_out,
        }

    def op_reset(self, req: Request) -> Response:
        self.globals = fresh_globals()
        return {"ok": True}


def main() -> int:
    channel = Channel()
    try:
        forwarder = FdForwarder()
    except Exception as exc:
        channel.send({"ready": False, "ok": False, "error": f"pyrepl failed to start: {exc!r}"})
        return 1
    sys.stdout = sys.stderr = forwarder.stream
    repl = Repl(forwarder)
    handlers = {
        "exec": repl.op_exec,
        "eval": repl.op_eval,
        "reset": repl.op_reset,
        "ping": lambda req: {"ok": True},
    }
    version = ".".join(map(str, sys.version_info[:3]))
    channel.send({"ready": True, "helper": "pyrepl", "python": version})
    return serve(channel, handlers)


if __name__ == "__main__":
    sys.exit(main())

"""Split a test statement into the calls a sandbox evaluates and the check the scorer evaluates.

An MBPP test is an assert such as ``assert max_chain_length([Pair(5, 24), Pair(15, 25)], 2) == 1``.
The agent's code must never see the assert, its comparison or its expected value, so the scorer cuts
the statement apart:

- A **probe** is a maximal call chain (a name followed by calls, attributes and subscripts) whose
  name is not a built-in: ``max_chain_length([Pair(5, 24), ...], 2)``, ``sys.getsizeof((1, 2))``,
  ``root``. A sandbox evaluates it in the submission's namespace, arguments and all (so class
  instances as arguments, and objects the task's ``test_setup_code`` builds, work as in the
  original), and sends back the plain value (:mod:`~intercode_agents.envs.python.values`).
- The **check** is the rest: the comparison, the literals, built-ins such as ``int(...)`` applied to a
  probe. The scorer evaluates it on its own side, with the interpreter's own built-ins, on the decoded
  values; a probe's error is raised where the probe stands, so error texts read as they did when the
  whole assert ran in one interpreter.

A probe that calls the entry point is the **agent's**, evaluated where the submission was rebuilt;
the entry point must then be its head (the agent's function receives the test's arguments and
nothing else). A probe that does not call it is on the **expected** side (``sys.getsizeof(...)`` in
MBPP 596) and is evaluated where the gold solution runs, so the agent's code never computes an
expected value. A task's own trusted helpers (``host_code``: HumanEval 32 applies the prompt's ``poly`` to the
agent's answer) count as built-ins here: the scorer defines them from the task file and calls them
on the decoded values. A test that cannot be cut this way (the entry point's result passed to a
function that is neither, a probe that uses a variable of a comprehension or lambda, a statement that
is not one assert) raises :class:`UnsplittableTest`; the env then calls the task corrupt rather than
score it unsafely. Every MBPP test splits.
"""

from __future__ import annotations

import ast
import builtins
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from intercode_agents.envs.python.reward import TestOutcome

# Built-ins the check may use on the scorer's side: pure functions and the plain types.
HOST_BUILTINS: frozenset[str] = frozenset(
    "abs all any ascii bin bool bytearray bytes callable chr complex dict divmod enumerate filter float "
    "format frozenset hash hex int isinstance issubclass iter len list map max min next oct ord pow "
    "range repr reversed round set slice sorted str sum tuple type zip".split()
)
PROBE_NAME = "__probe__"
Side = Literal["agent", "expected"]


class UnsplittableTest(ValueError):
    """A test statement the scorer cannot cut into probes and a check."""


@dataclass(frozen=True)
class Probe:
    """One expression a sandbox evaluates: its source text and which side evaluates it."""

    source: str
    side: Side


@dataclass(frozen=True)
class ProbeResult:
    """What evaluating one probe gave: a decoded value, or an error (a timeout is one). ``refused``:
    the error is the scorer's refusal of the value the runner sent (malformed, or past a bound)."""

    value: Any = None
    error: str | None = None
    timed_out: bool = False
    refused: bool = False


@dataclass(frozen=True)
class SplitTest:
    source: str
    probes: tuple[Probe, ...]
    check: ast.Expression  # the assert's test, each probe replaced by __probe__(index)
    message: ast.Expression | None  # the assert's message, likewise

    def probe_sources(self, side: Side | None = None) -> list[str]:
        return [p.source for p in self.probes if side is None or p.side == side]


def _head(node: ast.expr) -> ast.expr:
    """The innermost base of a call chain: ``sys`` for ``sys.getsizeof(x)[0]``."""
    while isinstance(node, ast.Call | ast.Attribute | ast.Subscript):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node


def _bound_by(node: ast.expr) -> set[str]:
    """Names a comprehension or lambda binds for its inner expressions."""
    if isinstance(node, ast.Lambda):
        args = node.args
        every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
        return {a.arg for a in every if a is not None}
    names: set[str] = set()
    for generator in getattr(node, "generators", []):
        names |= {n.id for n in ast.walk(generator.target) if isinstance(n, ast.Name)}
    return names


class _Splitter(ast.NodeTransformer):
    def __init__(self, entry_point: str, host_names: frozenset[str], test: str) -> None:
        self.entry_point = entry_point
        self.host_names = host_names
        self.test = test
        self.probes: list[Probe] = []
        self.bound: list[set[str]] = []

    def _free(self, name: str) -> bool:
        return name not in self.host_names and not any(name in scope for scope in self.bound)

    def _needs_sandbox(self, node: ast.AST) -> bool:
        return any(isinstance(n, ast.Name) and self._free(n.id) for n in ast.walk(node))

    def _probe(self, node: ast.expr) -> ast.expr:
        names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        local = names & set().union(*self.bound) if self.bound else set()
        if local:
            raise UnsplittableTest(
                f"{self.test!r}: the call {ast.unparse(node)!r} uses {sorted(local)}, bound inside the test"
            )
        head = _head(node)
        calls_entry = self.entry_point in names
        if calls_entry and not (isinstance(head, ast.Name) and head.id == self.entry_point):
            raise UnsplittableTest(
                f"{self.test!r}: {ast.unparse(node)!r} passes {self.entry_point}'s result to code "
                "the scorer cannot run outside the sandbox"
            )
        index = len(self.probes)
        self.probes.append(Probe(ast.unparse(node), "agent" if calls_entry else "expected"))
        call = ast.Call(func=ast.Name(PROBE_NAME, ast.Load()), args=[ast.Constant(index)], keywords=[])
        return ast.copy_location(call, node)

    def visit(self, node: ast.AST) -> Any:
        if isinstance(node, ast.expr) and self._needs_sandbox(node):
            head = _head(node)
            if isinstance(head, ast.Name) and self._free(head.id):
                return self._probe(node)
            if isinstance(node, ast.Lambda | ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp):
                self.bound.append(_bound_by(node))
                try:
                    return self.generic_visit(node)
                finally:
                    self.bound.pop()
            if isinstance(node, ast.NamedExpr):
                raise UnsplittableTest(f"{self.test!r}: an assignment expression cannot be split")
        return self.generic_visit(node)


def split_test(source: str, entry_point: str, host_names: frozenset[str] = HOST_BUILTINS) -> SplitTest:
    """Cut one test statement into probes and a check (see the module docstring)."""
    try:
        tree = ast.parse(source.strip(), "<test>", "exec")
    except SyntaxError as exc:
        raise UnsplittableTest(f"{source!r} does not parse: {exc.msg}") from None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Assert):
        raise UnsplittableTest(f"{source!r} is not a single assert statement")
    statement = tree.body[0]
    # The entry point may shadow a built-in (MBPP 126 tests a function named ``sum``).
    splitter = _Splitter(entry_point, host_names - {entry_point}, source.strip())
    check = ast.fix_missing_locations(ast.Expression(splitter.visit(statement.test)))
    message = None
    if statement.msg is not None:
        message = ast.fix_missing_locations(ast.Expression(splitter.visit(statement.msg)))
    return SplitTest(source, tuple(splitter.probes), check, message)


class _ProbeFailed(Exception):
    def __init__(self, result: ProbeResult) -> None:
        self.result = result


def _host_error(exc: BaseException) -> str:
    lines = traceback.format_exception_only(type(exc), exc)
    return lines[-1].strip() if lines else type(exc).__name__


def host_helpers(code: str) -> dict[str, Any]:
    """The names a task's trusted host code defines (HumanEval 32's ``poly``, applied to the agent's
    answer), for the check to call here. The code comes from the task file, never from the agent; the
    agent's values reach it only decoded to plain data."""
    namespace: dict[str, Any] = {}
    if code:
        exec(compile(code, "<task helpers>", "exec"), namespace)
    return {name: value for name, value in namespace.items() if name != "__builtins__"}


def evaluate(
    test: SplitTest,
    results: Sequence[ProbeResult | None],
    host_names: frozenset[str] = HOST_BUILTINS,
    helpers: Mapping[str, Any] | None = None,
) -> TestOutcome:
    """The outcome of ``test`` given each probe's result (None: the probe was never evaluated);
    ``helpers`` are the task's own functions and modules the check may call (:func:`host_helpers`)."""

    def fetch(index: int) -> Any:
        result = results[index] if index < len(results) else None
        if result is None:
            raise _ProbeFailed(ProbeResult(error="RuntimeError: the call was not evaluated"))
        if result.error is not None:
            raise _ProbeFailed(result)
        return result.value

    namespace: dict[str, Any] = {"__builtins__": {}, PROBE_NAME: fetch}
    namespace.update({name: getattr(builtins, name) for name in host_names if hasattr(builtins, name)})
    namespace.update(helpers or {})
    try:
        if eval(compile(test.check, "<check>", "eval"), namespace):
            return TestOutcome(passed=True)
        if test.message is None:
            return TestOutcome(passed=False, error="AssertionError")
        message = eval(compile(test.message, "<check>", "eval"), namespace)
        return TestOutcome(passed=False, error=_host_error(AssertionError(message)))
    except _ProbeFailed as failed:
        result = failed.result
        refused = result.error if result.refused else None
        return TestOutcome(passed=False, error=result.error, timed_out=result.timed_out, refused=refused)
    except MemoryError as exc:  # the values were within bounds, but what the check made of them was not
        error = _host_error(exc)
        return TestOutcome(passed=False, error=error, refused=f"the check ran out of memory ({error})")
    except Exception as exc:
        return TestOutcome(passed=False, error=_host_error(exc))

"""Reward hacks against the Python (MBPP) scorer earn nothing, in either reward mode.

Each test plays what a hostile agent would run in its REPL, then scores the state the way Try Again
does (``env.evaluate(name)``). The agent's functions are wrong on purpose, so any reward above 0 is a
hack that worked. The first three are the findings of issue 13; the rest are the ones it asked us to
think of. Only the public env API is used, so each test also runs against the scorer of before.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest

from intercode_agents import make_env
from intercode_agents.datasets import Task
from intercode_agents.envs import Env

MODES = ("intercode", "strict")
TASK = "python/mini/0"  # second_largest; tests expect 4, None and -4
NAME = "second_largest"

ALWAYS_EQUAL = """
class AlwaysEqual:
    def __eq__(self, other):
        return True
    def __ne__(self, other):
        return False
    __hash__ = object.__hash__
def second_largest(nums):
    return AlwaysEqual()
"""


@pytest.fixture(scope="module", params=MODES)
async def env(request: pytest.FixtureRequest) -> AsyncIterator[Env]:
    async with make_env("python", reward=request.param, test_timeout=2) as env:
        yield env


async def score(env: Env, cells: list[str], *, task: str | Task = TASK, name: str = NAME) -> float:
    await (env.reset(task=task) if isinstance(task, Task) else env.reset(task_id=task))
    for cell in cells:
        await env.gym.step(cell)
    return (await env.evaluate(name)).reward


async def test_finding_1_an_always_equal_result_scores_nothing(env: Env) -> None:
    assert await score(env, [ALWAYS_EQUAL]) == 0.0


async def test_finding_2_rewriting_the_repl_test_runner_scores_nothing(env: Env) -> None:
    # Replace every request handler of the REPL process with one that says each test passed.
    patch = """
import gc
def _all_passed(req):
    n = len(req.get("tests") or [1, 2, 3])
    return {"ok": True, "setup_error": None,
            "results": [{"passed": True, "error": None, "timed_out": False}] * n}
for table in [o for o in gc.get_objects() if isinstance(o, dict) and "exec" in o and "ping" in o]:
    for op in list(table):
        if op != "exec":
            table[op] = _all_passed
def second_largest(nums):
    return 0
"""
    assert await score(env, [patch]) == 0.0


async def test_finding_3_the_tests_never_enter_the_agent_interpreter(env: Env) -> None:
    # A thread records every string that mentions an assert, from linecache and from every object
    # the collector tracks, while the scorer runs; afterwards the agent looks at what it caught.
    spy = """
import gc, linecache, threading, time
caught = set()
needle = "assert " + "second_largest("  # spelled apart, so this cell's own source does not match
def _look(text):
    if isinstance(text, str) and needle in text and text is not needle:
        caught.add(text)
def _watch():
    while True:
        for entry in list(linecache.cache.values()):
            for line in entry[2] if len(entry) > 2 else []:
                _look(line)
        for obj in gc.get_objects():
            if isinstance(obj, dict):
                for value in list(obj.values()):
                    _look(value)
                    if isinstance(value, list):
                        for item in value:
                            _look(item)
        time.sleep(0.001)
threading.Thread(target=_watch, daemon=True).start()
def second_largest(nums):
    return 0
"""
    await score(env, [spy])
    obs, *_ = await env.gym.step("time.sleep(0.2); print(sorted(caught))")
    assert obs.strip() == "[]"


def _subclass_hack(base: str, value: str) -> str:
    return f"""
class Sneaky({base}):
    def __eq__(self, other):
        return True
    def __ne__(self, other):
        return False
    __hash__ = {base}.__hash__
def second_largest(nums):
    return Sneaky({value})
"""


@pytest.mark.parametrize(("base", "value"), [("int", "0"), ("float", "0.5"), ("str", "'x'"), ("list", "[]")])
async def test_subclasses_of_plain_types_with_odd_eq_score_nothing(env: Env, base: str, value: str) -> None:
    assert await score(env, [_subclass_hack(base, value)]) == 0.0


async def test_an_object_whose_class_lies_scores_nothing(env: Env) -> None:
    liar = ALWAYS_EQUAL.replace(
        "class AlwaysEqual:", "class AlwaysEqual:\n    __class__ = property(lambda s: int)"
    )
    assert await score(env, [liar, "assert isinstance(second_largest([]), int)"]) == 0.0


async def test_a_result_that_changes_after_it_was_compared_scores_nothing(env: Env) -> None:
    shifty = """
class Shifty(list):
    compared = 0
    def __eq__(self, other):
        Shifty.compared += 1
        self[:] = [other] if Shifty.compared == 1 else []
        return True
    __hash__ = None
def second_largest(nums):
    return Shifty()
"""
    assert await score(env, [shifty]) == 0.0


async def test_monkeypatching_builtins_and_the_runner_scores_nothing(env: Env) -> None:
    # At call time, in the scoring process: builtins lie about types, json writes "passed", and every
    # handler of the process answers that the tests passed.
    rigged = """
import builtins, gc, json, sys
def second_largest(nums):
    builtins.isinstance = lambda obj, kind: True
    builtins.type = lambda obj: int
    json.dumps = lambda *a, **k: '{"ok": true, "passed": true, "results": [{"passed": true}]}'
    for table in [o for o in gc.get_objects() if isinstance(o, dict) and "ping" in o]:
        for op in list(table):
            table[op] = lambda req: {"ok": True, "passed": True, "loaded": True,
                                     "results": [{"passed": True, "value": ["bool", True]}] * 3}
    for name, module in list(sys.modules.items()):
        if hasattr(module, "encode") and name.startswith("py"):
            module.encode = lambda value: ["bool", True]
    return 0
"""
    assert await score(env, [rigged]) == 0.0


SPY_FUNCTION = """
import ast, gc, glob, linecache, sys
def _expected_from(text, args):
    try:
        tree = ast.parse(text.strip())
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and isinstance(node.left, ast.Call):
            try:
                if [ast.literal_eval(a) for a in node.left.args] == list(args):
                    return ("found", ast.literal_eval(node.comparators[0]))
            except ValueError:
                pass
    return None
def _texts():
    frame = sys._getframe(1)
    while frame is not None:
        yield "".join(linecache.getlines(frame.f_code.co_filename))
        yield from (c for c in frame.f_code.co_consts if isinstance(c, str))
        yield from (v for v in frame.f_locals.values() if isinstance(v, str))
        frame = frame.f_back
    for entry in list(linecache.cache.values()):
        if len(entry) > 2:
            yield "".join(entry[2])
    for obj in gc.get_objects():
        if isinstance(obj, (list, dict)):
            yield from (v for v in (obj.values() if isinstance(obj, dict) else obj) if isinstance(v, str))
    for path in glob.glob("/opt/**/*", recursive=True) + glob.glob("/tmp/**/*", recursive=True):
        try:
            with open(path) as fh:
                yield fh.read()
        except (OSError, UnicodeDecodeError):
            pass
def second_largest(*args):
    for text in _texts():
        if "assert" in text:
            for line in text.splitlines():
                found = _expected_from(line, args)
                if found:
                    return found[1]
    return "not found"
"""


async def test_a_function_that_reads_its_test_from_its_process_scores_nothing(env: Env) -> None:
    # Frames, code constants, linecache, every tracked container and the files it can read.
    assert await score(env, [SPY_FUNCTION]) == 0.0


async def test_fake_results_on_the_output_channels_score_nothing(env: Env) -> None:
    liar = """
import json, os
def second_largest(nums):
    claims = [{"id": n, "ok": True, "passed": True, "loaded": True,
               "results": [{"passed": True, "value": ["bool", True]}]} for n in range(1, 50)]
    text = "".join(json.dumps(c) + "\\n" for c in claims)
    print(text)
    for fd in map(int, os.listdir("/proc/self/fd")):
        try:
            os.write(fd, text.encode())
        except OSError:
            pass
    return -1
"""
    assert await score(env, [liar]) == 0.0


@pytest.mark.parametrize(
    "line", ["[1]", '{"id": 999, "ok": true}', "[" * 100000 + "]" * 100000], ids=["list", "other-id", "bomb"]
)
async def test_junk_on_the_protocol_stream_scores_nothing_and_scoring_ends(line: str) -> None:
    # A thread keeps writing lines that are not answers (JSON that is no object, answers to other
    # requests, a nesting bomb) to every descriptor of the scoring process, and never stops, while
    # the call itself never returns.
    flood = f"""
import os, signal, threading, time
LINE = {line!r}.encode() + b"\\n"
def _flood():
    while True:
        for fd in range(3, 32):
            try:
                os.write(fd, LINE)
            except OSError:
                pass
        time.sleep(0.05)
def second_largest(nums):
    threading.Thread(target=_flood, daemon=True).start()
    signal.signal(signal.SIGALRM, signal.SIG_IGN)
    time.sleep(1000)
"""
    async with make_env("python", reward="strict", test_timeout=1) as env:
        started = time.perf_counter()
        assert await score(env, [flood]) == 0.0
        assert time.perf_counter() - started < 90


async def test_a_forked_daemon_scores_nothing_and_scoring_ends() -> None:
    daemon = """
import json, os, time
def second_largest(nums):
    if os.fork() == 0:
        os.setsid()
        for fd in range(3, 64):
            try:
                os.write(fd, (json.dumps({"ok": True, "results": [{"passed": True}]}) + "\\n").encode())
            except OSError:
                pass
        time.sleep(600)
        os._exit(0)
    return 1
"""
    async with make_env("python", reward="strict", test_timeout=2) as env:
        started = time.perf_counter()
        assert await score(env, [daemon]) == 0.0
        assert time.perf_counter() - started < 60


async def test_a_function_that_defeats_its_deadline_times_out_and_scoring_ends() -> None:
    sleeper = """
import signal, time
def second_largest(nums):
    signal.signal(signal.SIGALRM, signal.SIG_IGN)
    signal.setitimer(signal.ITIMER_REAL, 0)
    time.sleep(1000)
"""
    async with make_env("python", reward="strict", test_timeout=1) as env:
        await env.reset(task_id=TASK)
        await env.gym.step(sleeper)
        started = time.perf_counter()
        result = await env.evaluate(NAME)
        assert result.reward == 0.0 and result.parts["timeouts"] == 3
        assert time.perf_counter() - started < 60  # three tests, each cut at 1 s plus the grace period


async def test_killing_the_scoring_sandbox_is_the_agent_failure_not_an_env_error(env: Env) -> None:
    killer = """
import os, signal
def second_largest(nums):
    os.kill(-1, signal.SIGKILL)  # every process of the sandbox but this one
    os.kill(os.getpid(), signal.SIGKILL)
    return 0
"""
    assert await score(env, [killer]) == 0.0


async def test_a_fake_module_cannot_change_an_expected_value(env: Env) -> None:
    # MBPP 596 compares with sys.getsizeof(...); that side runs with the gold, never the agent's `sys`.
    task = Task(
        id="python/hacks/getsizeof",
        env="python",
        split="hacks",
        query="Write a function to find the size of the given tuple.",
        gold="import sys\ndef tuple_size(t):\n    return sys.getsizeof(t)",
        image="python",
        group={},
        meta={
            "tests": ["assert tuple_size((1, 2, 3)) == sys.getsizeof((1, 2, 3))"],
            "test_setup_code": "",
            "entry_point": "tuple_size",
        },
    )
    fake = "class sys:\n    getsizeof = staticmethod(lambda t: 0)\ndef tuple_size(t):\n    return 0"
    assert await score(env, [fake], task=task, name="tuple_size") == 0.0
    honest = "import sys\ndef tuple_size(t):\n    return sys.getsizeof(t)"
    assert await score(env, [honest], task=task, name="tuple_size") == 1.0

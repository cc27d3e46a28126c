"""Honest solutions score as they did when the tests ran in the agent's REPL.

Scoring rebuilds the agent's definitions in a sandbox of its own and compares plain values on the
scorer's side (see ``envs/python/scorer.py``); these tests pin down that an honest function gets the
outcome Python's own ``assert`` gives it: floats, sets, tuples against lists, None, bools, errors the
gold raises too, ``test_setup_code``, helper classes in the arguments, and state built over several
cells. The outcome texts the intercode mode compares with the gold's are checked one by one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from intercode_agents import make_env
from intercode_agents.datasets import Task
from intercode_agents.envs import Env
from intercode_agents.envs.python.reward import TestOutcome
from intercode_agents.envs.python.scorer import AssertScorer, Cell, Program
from intercode_agents.images import image_ref
from intercode_agents.sandbox import Sandbox

GOOD = "def second_largest(nums):\n    d = sorted(set(nums))[::-1]\n    return d[1] if len(d) > 1 else None"


def make_task(name: str, gold: str, tests: list[str], entry: str, setup: str = "") -> Task:
    return Task(
        id=f"python/honest/{name}",
        env="python",
        split="honest",
        query=f"Write {entry}.",
        gold=gold,
        image="python",
        group={},
        meta={"tests": tests, "test_setup_code": setup, "entry_point": entry},
    )


@pytest.fixture(scope="module", params=["intercode", "strict"])
async def env(request: pytest.FixtureRequest) -> AsyncIterator[Env]:
    async with make_env("python", reward=request.param) as env:
        yield env


async def score(env: Env, task: Task | str, cells: list[str], name: str) -> float:
    await (env.reset(task=task) if isinstance(task, Task) else env.reset(task_id=task))
    for cell in cells:
        await env.gym.step(cell)
    return (await env.evaluate(name)).reward


FLOATS = make_task(
    "floats",
    "import math\ndef area(r):\n    return math.pi * r * r",
    ["assert area(2) == 12.566370614359172", "assert area(0.5) == 0.7853981633974483"],
    "area",
)
SETS = make_task(
    "sets",
    "def common(a, b):\n    return set(a) & set(b)",
    ["assert common([1, 2, 3], [2, 3, 4]) == {2, 3}", "assert common([1], [2]) == set()"],
    "common",
)
PAIRS = make_task(
    "tuples",
    "def swap(a, b):\n    return (b, a)",
    ["assert swap(1, 2) == (2, 1)", "assert swap('x', 'y') == ('y', 'x')"],
    "swap",
)
NONE_AND_BOOLS = make_task(
    "none",
    "def first_even(xs):\n    return next((x for x in xs if x % 2 == 0), None)\n"
    "def is_even(x):\n    return x % 2 == 0",
    [
        "assert first_even([1, 3]) is None",
        "assert first_even([1, 4]) == 4",
        "assert (first_even([2]) == 2) == True",
    ],
    "first_even",
)
COUNTS = make_task(
    "counts",
    "def counts(text):\n    out = {}\n    for c in text:\n        out[c] = out.get(c, 0) + 1\n    return out",
    ["assert counts('aab') == {'a': 2, 'b': 1}", "assert counts('') == {}"],
    "counts",
)


@pytest.mark.parametrize(
    ("task", "code", "reward"),
    [
        (FLOATS, "import math\ndef area(r):\n    return math.pi * r ** 2", 1.0),
        (FLOATS, "def area(r):\n    return round(3.14159 * r * r, 6)", 0.0),  # floats compare exactly
        (SETS, "def common(a, b):\n    return frozenset(a).intersection(b)", 1.0),  # frozenset == set
        (SETS, "def common(a, b):\n    return sorted(set(a) & set(b))", 0.0),  # a list is no set
        (PAIRS, "def swap(a, b):\n    return [b, a]", 0.0),  # a list is no tuple
        (
            PAIRS,
            "from collections import namedtuple\nP = namedtuple('P', 'x y')\ndef swap(a, b):\n"
            "    return P(b, a)",
            1.0,
        ),  # a namedtuple is a tuple
        (NONE_AND_BOOLS, "def first_even(xs):\n    return next((x for x in xs if x % 2 == 0), 0)", 2 / 3),
        (
            NONE_AND_BOOLS,
            "def first_even(xs):\n    return next((x * 1.0 for x in xs if x % 2 == 0), None)",
            1.0,
        ),
        (COUNTS, "from collections import Counter\ndef counts(text):\n    return Counter(text)", 1.0),
        (
            COUNTS,
            "from collections import defaultdict\ndef counts(text):\n    d = defaultdict(int)\n"
            "    for c in text:\n        d[c] += 1\n    return d",
            1.0,
        ),
        (COUNTS, "def counts(text):\n    return {c: text.count(c) for c in text}.items()", 0.0),
    ],
    ids=[
        "float",
        "float-rounded",
        "frozenset",
        "sorted-list",
        "list-for-tuple",
        "namedtuple",
        "zero-for-none",
        "float-for-int",
        "counter",
        "defaultdict",
        "dict-items",
    ],
)
async def test_plain_values_compare_as_python_compares_them(
    env: Env, task: Task, code: str, reward: float
) -> None:
    assert await score(env, task, [code], task.meta["entry_point"]) == pytest.approx(reward)


RAISES = make_task(
    "raises",
    "def ratio(a, b):\n    return a / b",
    ["assert ratio(6, 3) == 2", "assert ratio(1, 0) == 0"],  # the gold raises ZeroDivisionError
    "ratio",
)


async def test_an_error_the_gold_raises_too_counts_only_in_intercode_mode(env: Env) -> None:
    same = await score(env, RAISES, ["def ratio(a, b):\n    return a * (1 / b)"], "ratio")
    other = await score(env, RAISES, ["def ratio(a, b):\n    return a / b if b else None + 1"], "ratio")
    if env.reward_mode == "intercode":
        assert (same, other) == (1.0, 0.5)  # the error text must be the gold's: ZeroDivisionError
    else:
        assert (same, other) == (1.0, 1.0)  # the test the gold fails is dropped


NODE = (
    "class Node:\n    def __init__(self, data):\n        self.data, self.left, self.right = data, None, None"
)
TREES = make_task(
    "trees",
    NODE
    + "\ndef height(node):\n    return 0 if node is None else 1 + max(height(node.left), height(node.right))",
    ["assert height(root) == 3", "assert (height(leaf)) == 1"],
    "height",
    setup="root = Node(1)\r\nroot.left = Node(2)\r\nroot.left.right = Node(3)\r\nleaf = Node(9)",
)


async def test_setup_code_builds_arguments_from_the_agent_classes(env: Env) -> None:
    honest = NODE + "\ndef height(n):\n    return n and 1 + max(height(n.left), height(n.right)) or 0"
    assert await score(env, TREES, [honest], "height") == 1.0
    # Without a Node class of its own the setup fails, for every test, as it did in the REPL.
    assert await score(env, TREES, ["def height(n):\n    return 3"], "height") == 0.0


PAIR_CLASS = "class Pair:\n    def __init__(self, a, b):\n        self.a = a\n        self.b = b"
CHAINS = make_task(
    "pairs",
    PAIR_CLASS + "\ndef widest(pairs, n):\n    return max(p.b - p.a for p in pairs[:n])",
    ["assert widest([Pair(1, 5), Pair(2, 3)], 2) == 4", "assert widest([Pair(0, 1)], 1) == 1"],
    "widest",
)


async def test_helper_classes_in_the_arguments_are_the_agent_own(env: Env) -> None:
    honest = [PAIR_CLASS, "def widest(pairs, n):\n    return max(p.b - p.a for p in pairs[:n])"]
    assert await score(env, CHAINS, honest, "widest") == 1.0


async def test_state_built_over_several_cells_is_rebuilt(env: Env) -> None:
    cells = [
        "from __future__ import annotations\nimport functools\nBIG: int = 10 ** 9 + 7",
        "def _helper(nums: list[int]) -> list[int]:\n    return sorted(set(nums), reverse=True)",
        "print(_helper([3, 1]))\nprint('exploring')",  # expression statements: not replayed, not needed
        "@functools.lru_cache(maxsize=None)\ndef pick(t):\n    d = _helper(list(t))\n"
        "    return d[1] if len(d) > 1 else None",
        "second_largest = lambda nums: pick(tuple(nums)) if BIG else 0",
    ]
    assert await score(env, "python/mini/0", cells, "second_largest") == 1.0


async def test_annotations_are_not_evaluated_as_in_the_repl(env: Env) -> None:
    # The REPL compiles cells with postponed annotations, so `List` needs no import there.
    typed = (
        "def second_largest(nums: List[int]) -> Optional[int]:\n    d = sorted(set(nums))[::-1]\n"
        "    return d[1] if len(d) > 1 else None"
    )
    assert await score(env, "python/mini/0", [typed], "second_largest") == 1.0


async def test_a_cell_counts_only_up_to_the_statement_that_raised(env: Env) -> None:
    good = GOOD
    # The redefinition after the failing line never ran in the REPL, so it is not scored either.
    cells = [good, "undefined_name\ndef second_largest(nums):\n    return 0"]
    assert await score(env, "python/mini/0", cells, "second_largest") == 1.0
    # A cell that does not compile changes nothing.
    assert (
        await score(env, "python/mini/0", [good, "def second_largest(nums):\nreturn 0"], "second_largest")
        == 1.0
    )
    # Statements before the failing one do count.
    cells = ["def second_largest(nums):\n    return 0\nundefined_name", "x = 1"]
    assert await score(env, "python/mini/0", [good, *cells], "second_largest") == 0.0


async def test_a_restarted_repl_forgets_its_definitions() -> None:
    good = GOOD
    stuck = "import signal, time\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\ntime.sleep(60)"
    async with make_env("python", action_timeout=1) as env:
        await env.reset(task_id="python/mini/0")
        await env.gym.step(good)
        assert (await env.evaluate("second_largest")).reward == 1.0
        _, _, _, _, info = await env.gym.step(stuck)  # no answer: the REPL process is replaced
        assert info["timed_out"]
        obs, *_ = await env.gym.step("second_largest([1, 2])")
        assert "NameError" in obs
        assert (await env.evaluate("second_largest")).reward == 0.0


async def test_mbpp_tasks_with_unusual_tests_score_their_gold(env: Env) -> None:
    # 126: the entry point is called `sum`; 912: the test wraps the call in int(); 596: the expected
    # side calls sys.getsizeof; 367: the setup builds trees; 601: Pair instances as arguments.
    for number in (126, 912, 596, 367, 601):
        await env.reset(task_id=f"python/mbpp/{number}")
        task = env.task
        assert task is not None
        await env.gym.step(task.gold)
        assert (await env.evaluate(task.meta["entry_point"])).reward == 1.0, number


def _scorer(tests: list[str], entry: str = "f") -> AssertScorer:
    return AssertScorer(tests, entry, test_timeout=1, load_timeout=10)


async def test_outcome_texts_are_those_of_a_real_assert() -> None:
    tests = [
        "assert f(1) == 2",
        "assert f(2) == 3",
        "assert f(0) == 1",
        "assert f(-1) == 0",
        "assert g(1) == 1",
        "assert f(3) == 4, 'three'",
    ]
    agent_code = "def f(x):\n    if x < 0:\n        while True: pass\n    return 1 / x + 1 if x != 3 else 0\n"
    scorer = _scorer(tests)
    async with scorer.checker() as checker:
        async with Sandbox(image_ref("python")) as sb:
            agent = await scorer.run(sb, Program((Cell(agent_code),)), checker, "agent")
        async with Sandbox(image_ref("python")) as sb:
            gold_program = Program((Cell("def f(x):\n    return x + 1"),), whole=True)
            gold = await scorer.run(sb, gold_program, checker)
        mine, theirs = await scorer.outcomes(agent, gold, checker)
    assert mine == [
        TestOutcome(True),
        TestOutcome(False, "AssertionError"),
        TestOutcome(False, "ZeroDivisionError: division by zero"),
        TestOutcome(False, "TimeoutError: timed out after 1 s", timed_out=True),
        TestOutcome(False, "NameError: name 'g' is not defined"),
        TestOutcome(False, "AssertionError: three"),
    ]
    assert theirs == [TestOutcome(True)] * 4 + [mine[4], TestOutcome(True)]  # g(1) is the gold's to run


async def test_a_submitted_name_that_does_not_exist_fails_the_setup() -> None:
    scorer = _scorer(["assert f(1) == 2"])
    program = Program((Cell("def g(x):\n    return x + 1"),), "\nf = nope\n")
    async with scorer.checker() as checker:
        async with Sandbox(image_ref("python")) as sb:
            runs = await scorer.run(sb, program, checker, "agent")
        assert runs[0].setup_error == "NameError: name 'nope' is not defined"
        mine, _ = await scorer.outcomes(runs, runs, checker)
    assert mine == [TestOutcome(False, "setup failed: NameError: name 'nope' is not defined")]


async def test_a_test_that_cannot_be_split_makes_the_task_corrupt_never_a_free_reward(env: Env) -> None:
    task = make_task(
        "unsplittable", "def f(x):\n    return x", ["assert all(f(i) == i for i in range(3))"], "f"
    )
    await env.reset(task=task)
    await env.gym.step("def f(x):\n    return x")
    result = await env.evaluate("f")
    assert (result.reward, result.corrupt) == (0.0, True)
    assert "bound inside the test" in str(result.parts["unsplittable"])

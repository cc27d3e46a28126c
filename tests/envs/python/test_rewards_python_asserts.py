"""Cutting asserts into probes and a check, evaluating the check, and decoding the runner's values."""

from __future__ import annotations

import math

import pytest

from intercode_agents.envs.python.asserts import ProbeResult, UnsplittableTest, evaluate, split_test
from intercode_agents.envs.python.checks import TestRun, agent_outcome, gold_outcome, probe_results
from intercode_agents.envs.python.reward import TestOutcome
from intercode_agents.envs.python.values import (
    MAX_ITEMS,
    MalformedValue,
    Unscorable,
    ValueTooLarge,
    decode,
)


def probes(test: str, entry: str = "f") -> list[tuple[str, str]]:
    return [(p.source, p.side) for p in split_test(test, entry).probes]


@pytest.mark.parametrize(
    ("test", "entry", "expected"),
    [
        ("assert f([1, 2]) == [2, 1]", "f", [("f([1, 2])", "agent")]),
        ("assert int(lobb_num(5, 3)) == 35", "lobb_num", [("lobb_num(5, 3)", "agent")]),
        ("assert (max_height(root)) == 3", "max_height", [("max_height(root)", "agent")]),
        ("assert f([Pair(5, 24)], 4) == 3", "f", [("f([Pair(5, 24)], 4)", "agent")]),
        ("assert f(10, 5, 1.0/3) == 0.5", "f", [("f(10, 5, 1.0 / 3)", "agent")]),
        ("assert f((4, 7.7), int) == [7.7]", "f", [("f((4, 7.7), int)", "agent")]),
        ("assert sum(10, 15) == 6", "sum", [("sum(10, 15)", "agent")]),  # MBPP 126 shadows a built-in
        ("assert f(x)[0].real == 1", "f", [("f(x)[0].real", "agent")]),
        (
            "assert f((1, 2)) == sys.getsizeof((1, 2))",
            "f",
            [("f((1, 2))", "agent"), ("sys.getsizeof((1, 2))", "expected")],
        ),
        ("assert f(1) + f(2) == sorted([3])[0]", "f", [("f(1)", "agent"), ("f(2)", "agent")]),
        ("assert f(3) == [i * i for i in range(3)]", "f", [("f(3)", "agent")]),
        ("assert True", "f", []),
    ],
)
def test_probes_are_the_calls_and_nothing_of_the_check(test: str, entry: str, expected: list) -> None:
    assert probes(test, entry) == expected


@pytest.mark.parametrize(
    ("test", "why"),
    [
        ("assert check(f(1), 2)", "passes f's result"),
        ("assert sys.getsizeof(f(1)) == 3", "passes f's result"),
        ("assert all(f(i) == i for i in range(3))", "bound inside the test"),
        ("assert (g := f(1)) == 1", "assignment expression"),
        ("x = f(1)", "not a single assert"),
        ("assert f(1) == 1\nassert f(2) == 2", "not a single assert"),
        ("assert f(1) ==", "does not parse"),
    ],
)
def test_tests_that_cannot_be_cut_safely_are_refused(test: str, why: str) -> None:
    with pytest.raises(UnsplittableTest, match=why):
        split_test(test, "f")


def value(v: object) -> ProbeResult:
    return ProbeResult(value=v)


def check(test: str, *results: ProbeResult | None, entry: str = "f") -> TestOutcome:
    return evaluate(split_test(test, entry), list(results))


def test_the_check_is_python_equality_on_plain_values() -> None:
    assert check("assert f(1) == 4", value(4.0)) == TestOutcome(True)  # 4.0 == 4, as in Python
    assert check("assert f(1) == True", value(1)) == TestOutcome(True)
    assert check("assert f(1) == (1, 2)", value([1, 2])) == TestOutcome(False, "AssertionError")
    assert check("assert f(1) == {1, 2}", value(frozenset({1, 2}))) == TestOutcome(True)
    assert check("assert f(1) is None", value(None)) == TestOutcome(True)
    assert check("assert f(1) == 0.1 + 0.2", value(0.30000000000000004)) == TestOutcome(True)
    assert check("assert int(f(1)) == 35", value(35.0)) == TestOutcome(True)
    assert check("assert f(1) == 1, 'one'", value(2)) == TestOutcome(False, "AssertionError: one")
    assert check("assert f(1) != f(2)", value(math.nan), value(math.nan)) == TestOutcome(True)


def test_a_probe_error_is_raised_where_the_probe_stands() -> None:
    boom = ProbeResult(error="ZeroDivisionError: division by zero")
    assert check("assert f(1) == 2", boom) == TestOutcome(False, "ZeroDivisionError: division by zero")
    assert check("assert f(1) == 1 or f(2) == 2", value(1), boom) == TestOutcome(True)  # never reached
    late = ProbeResult(error="TimeoutError: timed out after 10 s", timed_out=True)
    assert check("assert f(1) == 2", late) == TestOutcome(False, late.error, timed_out=True)
    assert check("assert f(1) == 2", None).error == "RuntimeError: the call was not evaluated"


def test_the_scorer_own_errors_read_as_python_errors() -> None:
    assert check("assert int(f(1)) == 2", value("x")) == TestOutcome(
        False, "ValueError: invalid literal for int() with base 10: 'x'"
    )


def test_an_unscorable_result_equals_nothing_and_has_no_truth_value() -> None:
    opaque = value(Unscorable("__main__.AlwaysEqual"))
    assert check("assert f(1) == 4", opaque) == TestOutcome(False, "AssertionError")
    assert check("assert f(1) != 4", opaque) == TestOutcome(True)  # and it differs from everything
    truth = check("assert f(1)", opaque)
    assert truth.error == (
        "TypeError: the result is a __main__.AlwaysEqual object, which the scorer cannot compare"
    )


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (["none"], None),
        (["bool", True], True),
        (["int", "-1f"], -31),
        (["float", "0x1.8000000000000p+0"], 1.5),
        (["complex", "0x0.0p+0", "0x1.0p+0"], 1j),
        (["str", "\udc80"], "\udc80"),
        (["bytes", "AP8="], b"\x00\xff"),
        (["bytearray", "YQ=="], bytearray(b"a")),
        (["list", [["int", "1"], ["tuple", [["none"]]]]], [1, (None,)]),
        (["set", [["frozenset", [["int", "2"]]]]], {frozenset({2})}),
        (["dict", [[["str", "k"], ["list", []]]]], {"k": []}),
        (["range", "0", "a", "2"], range(0, 10, 2)),
        (["ellipsis"], ...),
    ],
)
def test_values_decode_to_exact_built_in_types(data: list, expected: object) -> None:
    decoded = decode(data)
    assert decoded == expected and type(decoded) is type(expected)


@pytest.mark.parametrize(
    "data",
    [
        "4",
        [],
        [4],
        ["int"],
        ["int", 4],
        ["int", "zz"],
        ["bool", 1],
        ["str", 5],
        ["float", "one"],
        ["bytes", "!!"],
        ["list", "abc"],
        ["set", [["list", []]]],
        ["dict", [[["str", "k"]]]],
        ["dict", [[["dict", []], ["none"]]]],
        ["range", "0", "1", "0"],
        ["fraction", "1", "0"],
        ["fraction", "1" * 20_000, "3"],
        ["decimal", "1.2.3"],
        ["decimal", "1e999999999"],
        ["float", "0x1p99999"],
        ["complex", "0x0p0", "-0x1p99999"],
        ["AlwaysEqual"],
        ["opaque", 3],
        ["none", "extra"],
    ],
)
def test_malformed_values_are_refused(data: object) -> None:
    with pytest.raises(MalformedValue):
        decode(data)


def test_nesting_beyond_what_the_runner_sends_is_refused() -> None:
    data: list = ["none"]
    for _ in range(200):
        data = ["list", [data]]
    with pytest.raises(MalformedValue, match="too deeply"):
        decode(data)


@pytest.mark.parametrize(
    "data",
    [
        ["list", [["none"]] * MAX_ITEMS],  # one value more than the runner ever sends, with the list
        ["range", "0", "3d0900", "1"],  # 4,000,000 items once a check makes a tuple of it
        ["range", "0", "f" * 40, "1"],  # longer than sys.maxsize
        ["str", "x" * (5 << 20)],
        ["list", [["int", "f" * (1 << 20)]] * 5],
        ["bytes", "AAAA" * (2 << 20)],
    ],
    ids=["items", "range", "huge-range", "str", "digits", "bytes"],
)
def test_values_past_a_bound_are_refused_as_too_large(data: list) -> None:
    with pytest.raises(ValueTooLarge, match="too large"):
        decode(data)


def test_the_largest_value_the_runner_sends_decodes() -> None:
    assert len(decode(["list", [["none"]] * (MAX_ITEMS - 1)])) == MAX_ITEMS - 1
    assert decode(["range", "0", format(MAX_ITEMS - 1, "x"), "1"]) == range(MAX_ITEMS - 1)


def _run(results: str, count: int = 1) -> TestRun:
    return TestRun(count, reply='{"ok": true, "loaded": true, "results": ' + results + ', "id": 3}')


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        ("not json", "not JSON"),
        ("[" * 100_000 + "]" * 100_000, "not JSON"),
        ("[1]", "not an object"),
    ],
)
def test_an_unreadable_answer_fails_every_probe_as_refused(reply: str, why: str) -> None:
    results = probe_results(TestRun(2, reply=reply))
    assert len(results) == 2 and all(r.refused and why in str(r.error) for r in results)


def test_a_refused_value_fails_the_agents_test_with_the_reason_and_not_the_golds() -> None:
    split = split_test("assert f(1) == 2", "f")
    gold = _run('[{"value": ["int", "2"]}]')
    assert gold_outcome(split, gold, {}) == TestOutcome(True)
    bad = _run('[{"value": ["float", "0x1p99999"]}]')
    outcome = agent_outcome(split, bad, gold, {})
    assert not outcome.passed and outcome.refused and "0x1p99999" in outcome.refused
    assert agent_outcome(split, _run('[{"value": ["int", "2"]}]'), gold, {}) == TestOutcome(True)

"""Decode the values a scoring runner sends back into plain Python data, strictly and within bounds.

The runner (``docker/python/pyscore_values.py``) tags every value with its type: ``["int", "1f"]``,
``["list", [...]]``, ``["opaque", "Node"]`` and so on. What it sends is untrusted, since the code
under test runs in its process (it can replace the encoder), so this decoder accepts only the
documented shapes and builds values of the exact built-in types (``bool``, ``int``, ``float``,
``complex``, ``str``, ``bytes``, ``bytearray``, ``list``, ``tuple``, ``set``, ``frozenset``, ``dict``,
``range``, ``None``, ``...``) and the standard library's ``Fraction`` and ``Decimal``. Comparing such
values runs only the interpreter's own equality, never code the agent wrote. Anything else arrives
as :class:`Unscorable`, which equals nothing but itself.

A value is also bounded as a whole: at most ``MAX_ITEMS`` values at all levels (a range counts as
many as it holds, since a check may turn it into a tuple), ``MAX_CHARS`` characters of text, digits
and base64, and ``MAX_DEPTH`` levels. An honest runner never sends more (it sends a larger value as
``opaque``), so a value past a bound is refused with :class:`ValueTooLarge`. What the bounds cannot
catch is time: a set of integers that collide in Python's hash is built in square time, so the
scorer decodes in a process of its own under a deadline (:mod:`.python_checks`).
"""

from __future__ import annotations

import base64
import binascii
import decimal
import fractions
from collections.abc import Callable
from typing import Any

MAX_DEPTH = 120  # the runner encodes at most 100 levels; anything deeper is malformed
MAX_ITEMS = 250_000  # the runner's own bound on the values of one result
MAX_CHARS = 4 << 20  # the runner sends at most 2 Mi characters of text and digits; base64 adds a third
MAX_FRACTION_DIGITS = 10_000  # hex digits of a Fraction's numerator or denominator, as the runner sends
MAX_DECIMAL_EXPONENT = 10_000


class MalformedValue(ValueError):
    """The runner's answer is not a value of the documented form."""


class ValueTooLarge(MalformedValue):
    """The value is larger or deeper than any the runner sends (see the module docstring)."""


class _Budget:
    """What one value may still hold."""

    __slots__ = ("chars", "items")

    def __init__(self) -> None:
        self.items = MAX_ITEMS
        self.chars = MAX_CHARS

    def take(self, items: int, chars: int = 0) -> None:
        self.items -= items
        self.chars -= chars
        if self.items < 0:
            raise ValueTooLarge(f"the result is too large to compare: more than {MAX_ITEMS:,} values")
        if self.chars < 0:
            raise ValueTooLarge(
                f"the result is too large to compare: more than {MAX_CHARS:,} characters of text and digits"
            )


class Unscorable:
    """A result that is not plain data (a function, an instance of the agent's class, a value too
    large to send): it equals nothing but itself, and has no truth value."""

    __slots__ = ("kind",)

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def __bool__(self) -> bool:
        raise TypeError(f"the result is a {self.kind} object, which the scorer cannot compare")

    def __repr__(self) -> str:
        return f"<{self.kind} object>"


def _hex_int(text: Any, budget: _Budget) -> int:
    if not isinstance(text, str) or not text:
        raise MalformedValue(f"an integer must travel as hex text, got {text!r:.60}")
    budget.take(0, len(text))
    try:
        return int(text, 16)
    except ValueError:
        raise MalformedValue(f"not a hex integer: {text!r:.60}") from None


def _hex_float(text: Any) -> float:
    if not isinstance(text, str) or len(text) > 64:
        raise MalformedValue(f"a float must travel as hex text, got {text!r:.60}")
    try:
        return float.fromhex(text)
    except OverflowError:
        raise MalformedValue(f"a float too large for the scorer's floats: {text!r:.60}") from None
    except ValueError:
        raise MalformedValue(f"not a hex float: {text!r:.60}") from None


def _b64(text: Any, budget: _Budget) -> bytes:
    if not isinstance(text, str):
        raise MalformedValue("bytes must travel as base64 text")
    budget.take(0, len(text))
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        raise MalformedValue("bad base64 in a bytes value") from None


def _items(data: Any) -> list[Any]:
    if not isinstance(data, list):
        raise MalformedValue("a container's items must be a list")
    return data


def _hashable(value: Any) -> Any:
    try:
        hash(value)
    except TypeError:
        raise MalformedValue(f"a set item or dict key of type {type(value).__name__} is unhashable") from None
    return value


def decode(data: Any) -> Any:
    """The plain value ``data`` encodes; :class:`MalformedValue` when it is not of the documented
    form, :class:`ValueTooLarge` when it is past a bound."""
    return _decode(data, 0, _Budget())


def _decode(data: Any, depth: int, budget: _Budget) -> Any:
    if depth > MAX_DEPTH:
        raise ValueTooLarge("the value is nested too deeply")
    if not isinstance(data, list) or not data or not isinstance(data[0], str):
        raise MalformedValue(f"a value must be a list starting with its type tag, got {data!r:.60}")
    budget.take(1)
    tag, args = data[0], data[1:]
    shape = _SHAPES.get(tag)
    if shape is None:
        raise MalformedValue(f"unknown type tag {tag!r:.40}")
    arity, build = shape
    if len(args) != arity:
        raise MalformedValue(f"a {tag!r} value takes {arity} field(s), got {len(args)}")
    return build(args, depth + 1, budget)


def _decode_all(items: Any, depth: int, budget: _Budget) -> list[Any]:
    return [_decode(item, depth, budget) for item in _items(items)]


def _pairs(items: Any, depth: int, budget: _Budget) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    for pair in _items(items):
        if not isinstance(pair, list) or len(pair) != 2:
            raise MalformedValue("a dict item must be a [key, value] pair")
        out[_hashable(_decode(pair[0], depth, budget))] = _decode(pair[1], depth, budget)
    return out


def _exact(kind: type, value: Any) -> Any:
    if type(value) is not kind:
        raise MalformedValue(f"expected a JSON {kind.__name__}, got {type(value).__name__}")
    return value


def _text(value: Any, budget: _Budget) -> str:
    text = _exact(str, value)
    budget.take(0, len(text))
    return text


def _decimal(args: list[Any], depth: int, budget: _Budget) -> decimal.Decimal:
    text = args[0]
    if not isinstance(text, str) or len(text) > 10_000:
        raise MalformedValue("a Decimal must travel as its text")
    budget.take(0, len(text))
    try:
        value = decimal.Decimal(text)
    except decimal.InvalidOperation:
        raise MalformedValue(f"not a Decimal: {text!r:.60}") from None
    if value.is_finite() and abs(value.adjusted()) > MAX_DECIMAL_EXPONENT:
        raise MalformedValue("a Decimal's exponent is too large")  # int() of it would never end
    return value


def _fraction(args: list[Any], depth: int, budget: _Budget) -> fractions.Fraction:
    if any(isinstance(a, str) and len(a) > MAX_FRACTION_DIGITS for a in args):
        raise MalformedValue("a Fraction's terms are too long")  # reducing them could take minutes
    numerator, denominator = _hex_int(args[0], budget), _hex_int(args[1], budget)
    if denominator <= 0:
        raise MalformedValue("a Fraction's denominator must be positive")
    return fractions.Fraction(numerator, denominator)


def _range(args: list[Any], depth: int, budget: _Budget) -> range:
    start, stop, step = (_hex_int(a, budget) for a in args)
    if step == 0:
        raise MalformedValue("a range's step cannot be zero")
    value = range(start, stop, step)
    try:
        length = len(value)
    except OverflowError:  # longer than sys.maxsize
        length = MAX_ITEMS + 1
    budget.take(min(length, MAX_ITEMS + 1))
    return value


def _complex(args: list[Any], depth: int, budget: _Budget) -> complex:
    return complex(_hex_float(args[0]), _hex_float(args[1]))


_Build = Callable[[list[Any], int, _Budget], Any]
_SHAPES: dict[str, tuple[int, _Build]] = {
    "none": (0, lambda a, d, b: None),
    "ellipsis": (0, lambda a, d, b: ...),
    "bool": (1, lambda a, d, b: _exact(bool, a[0])),
    "int": (1, lambda a, d, b: _hex_int(a[0], b)),
    "float": (1, lambda a, d, b: _hex_float(a[0])),
    "complex": (2, _complex),
    "str": (1, lambda a, d, b: _text(a[0], b)),
    "bytes": (1, lambda a, d, b: _b64(a[0], b)),
    "bytearray": (1, lambda a, d, b: bytearray(_b64(a[0], b))),
    "list": (1, lambda a, d, b: _decode_all(a[0], d, b)),
    "tuple": (1, lambda a, d, b: tuple(_decode_all(a[0], d, b))),
    "set": (1, lambda a, d, b: {_hashable(v) for v in _decode_all(a[0], d, b)}),
    "frozenset": (1, lambda a, d, b: frozenset(_hashable(v) for v in _decode_all(a[0], d, b))),
    "dict": (1, lambda a, d, b: _pairs(a[0], d, b)),
    "range": (3, _range),
    "fraction": (2, _fraction),
    "decimal": (1, _decimal),
    "opaque": (1, lambda a, d, b: Unscorable(str(_exact(str, a[0]))[:200])),
}

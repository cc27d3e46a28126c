"""Decode the values a scoring runner sends back into plain Python data, strictly.

The runner (``docker/python/pyscore_values.py``) tags every value with its type: ``["int", "1f"]``,
``["list", [...]]``, ``["opaque", "Node"]`` and so on. What it sends is untrusted, since the code
under test runs in its process, so this decoder accepts only the documented shapes and builds
values of the exact built-in types (``bool``, ``int``, ``float``, ``complex``, ``str``, ``bytes``,
``bytearray``, ``list``, ``tuple``, ``set``, ``frozenset``, ``dict``, ``range``, ``None``, ``...``) and
the standard library's ``Fraction`` and ``Decimal``. Comparing such values runs only the
interpreter's own equality, never code the agent wrote. Anything else arrives as
:class:`Unscorable`, which equals nothing but itself.
"""

from __future__ import annotations

import base64
import binascii
import decimal
import fractions
from collections.abc import Callable
from typing import Any

MAX_DEPTH = 120  # the runner encodes at most 100 levels; anything deeper is malformed
MAX_FRACTION_DIGITS = 10_000  # hex digits of a Fraction's numerator or denominator, as the runner sends
MAX_DECIMAL_EXPONENT = 10_000


class MalformedValue(ValueError):
    """The runner's answer is not a value of the documented form."""


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


def _hex_int(text: Any) -> int:
    if not isinstance(text, str) or not text or len(text) > (64 << 20):
        raise MalformedValue(f"an integer must travel as hex text, got {text!r:.60}")
    try:
        return int(text, 16)
    except ValueError:
        raise MalformedValue(f"not a hex integer: {text!r:.60}") from None


def _hex_float(text: Any) -> float:
    if not isinstance(text, str) or len(text) > 64:
        raise MalformedValue(f"a float must travel as hex text, got {text!r:.60}")
    try:
        return float.fromhex(text)
    except ValueError:
        raise MalformedValue(f"not a hex float: {text!r:.60}") from None


def _b64(text: Any) -> bytes:
    if not isinstance(text, str):
        raise MalformedValue("bytes must travel as base64 text")
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


def decode(data: Any, depth: int = 0) -> Any:
    """The plain value ``data`` encodes; :class:`MalformedValue` when it is not of the documented form."""
    if depth > MAX_DEPTH:
        raise MalformedValue("the value is nested too deeply")
    if not isinstance(data, list) or not data or not isinstance(data[0], str):
        raise MalformedValue(f"a value must be a list starting with its type tag, got {data!r:.60}")
    tag, args = data[0], data[1:]
    shape = _SHAPES.get(tag)
    if shape is None:
        raise MalformedValue(f"unknown type tag {tag!r:.40}")
    arity, build = shape
    if len(args) != arity:
        raise MalformedValue(f"a {tag!r} value takes {arity} field(s), got {len(args)}")
    return build(args, depth + 1)


def _decode_all(items: Any, depth: int) -> list[Any]:
    return [decode(item, depth) for item in _items(items)]


def _pairs(items: Any, depth: int) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    for pair in _items(items):
        if not isinstance(pair, list) or len(pair) != 2:
            raise MalformedValue("a dict item must be a [key, value] pair")
        out[_hashable(decode(pair[0], depth))] = decode(pair[1], depth)
    return out


def _exact(kind: type, value: Any) -> Any:
    if type(value) is not kind:
        raise MalformedValue(f"expected a JSON {kind.__name__}, got {type(value).__name__}")
    return value


def _decimal(args: list[Any], depth: int) -> decimal.Decimal:
    text = args[0]
    if not isinstance(text, str) or len(text) > 10_000:
        raise MalformedValue("a Decimal must travel as its text")
    try:
        value = decimal.Decimal(text)
    except decimal.InvalidOperation:
        raise MalformedValue(f"not a Decimal: {text!r:.60}") from None
    if value.is_finite() and abs(value.adjusted()) > MAX_DECIMAL_EXPONENT:
        raise MalformedValue("a Decimal's exponent is too large")  # int() of it would never end
    return value


def _fraction(args: list[Any], depth: int) -> fractions.Fraction:
    if any(isinstance(a, str) and len(a) > MAX_FRACTION_DIGITS for a in args):
        raise MalformedValue("a Fraction's terms are too long")  # reducing them could take minutes
    numerator, denominator = _hex_int(args[0]), _hex_int(args[1])
    if denominator <= 0:
        raise MalformedValue("a Fraction's denominator must be positive")
    return fractions.Fraction(numerator, denominator)


def _range(args: list[Any], depth: int) -> range:
    start, stop, step = (_hex_int(a) for a in args)
    if step == 0:
        raise MalformedValue("a range's step cannot be zero")
    return range(start, stop, step)


_Build = Callable[[list[Any], int], Any]
_SHAPES: dict[str, tuple[int, _Build]] = {
    "none": (0, lambda a, d: None),
    "ellipsis": (0, lambda a, d: ...),
    "bool": (1, lambda a, d: _exact(bool, a[0])),
    "int": (1, lambda a, d: _hex_int(a[0])),
    "float": (1, lambda a, d: _hex_float(a[0])),
    "complex": (2, lambda a, d: complex(_hex_float(a[0]), _hex_float(a[1]))),
    "str": (1, lambda a, d: _exact(str, a[0])),
    "bytes": (1, lambda a, d: _b64(a[0])),
    "bytearray": (1, lambda a, d: bytearray(_b64(a[0]))),
    "list": (1, lambda a, d: _decode_all(a[0], d)),
    "tuple": (1, lambda a, d: tuple(_decode_all(a[0], d))),
    "set": (1, lambda a, d: {_hashable(v) for v in _decode_all(a[0], d)}),
    "frozenset": (1, lambda a, d: frozenset(_hashable(v) for v in _decode_all(a[0], d))),
    "dict": (1, lambda a, d: _pairs(a[0], d)),
    "range": (3, _range),
    "fraction": (2, _fraction),
    "decimal": (1, _decimal),
    "opaque": (1, lambda a, d: Unscorable(str(_exact(str, a[0]))[:200])),
}

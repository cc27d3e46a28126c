"""Plain data out of the scoring process: a type-tagged JSON form of a value (stdlib only).

Every value becomes a list whose first item names its type:

  ["none"]  ["bool", b]  ["int", hex]  ["float", hex]  ["complex", hex, hex]  ["str", s]
  ["bytes", base64]  ["bytearray", base64]  ["list", [...]]  ["tuple", [...]]  ["set", [...]]
  ["frozenset", [...]]  ["dict", [[k, v], ...]]  ["range", hex, hex, hex]  ["fraction", hex, hex]
  ["decimal", text]  ["ellipsis"]  ["opaque", type name]

Integers and floats travel in hex (exact, no digit limit, nan and inf included). An instance of a
subclass of one of these types is read through the base type's own methods, so what travels is the
plain value it holds and none of its overridden methods runs. A dict's keys and items views travel
as sets (they compare as sets do). Anything else (functions, instances of other classes, values
nested too deep or too large) is ``opaque``: the scorer compares it with nothing. The scorer decodes
this form strictly on its own side; what the code under test does to this module can only change
which plain values arrive, never what they are compared with.
"""

from __future__ import annotations

import base64
import sys
from typing import Any

MAX_DEPTH = 100
MAX_ITEMS = 250_000  # values in one result, all levels together
MAX_FRACTION_DIGITS = 10_000  # the scorer reduces a Fraction it receives: longer terms would take long
MAX_CHARS = 2 << 20  # characters of str, bytes and digits in one result (the answer line stays < 16 MiB)

Encoded = list[Any]

# The plain types, most specific first (bool is an int, but cannot be subclassed).
_BASES: tuple[type, ...] = (
    bool,
    int,
    float,
    complex,
    str,
    bytes,
    bytearray,
    list,
    tuple,
    set,
    frozenset,
    dict,
)


_KEYS, _ITEMS = type({}.keys()), type({}.items())


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


class _TooLarge(Exception):
    """The value is nested deeper than MAX_DEPTH or holds more than the budget allows."""


class _Encoder:
    def __init__(self) -> None:
        self.items = 0
        self.chars = 0
        self.bases: dict[type, type | None] = {}

    def _base(self, kind: type) -> type | None:
        """The plain type ``kind`` is or derives from (from its real MRO, not ``__class__``)."""
        if kind not in self.bases:
            self.bases[kind] = next((b for b in _BASES if issubclass(kind, b)), None)
        return self.bases[kind]

    def _count(self, depth: int, chars: int) -> None:
        self.items += 1
        self.chars += chars
        if depth > MAX_DEPTH or self.items > MAX_ITEMS or self.chars > MAX_CHARS:
            raise _TooLarge

    def encode(self, value: Any, depth: int) -> Encoded:
        kind = type(value)
        base = self._base(kind)
        if base is int:
            digits = int.__format__(value, "x")
            self._count(depth, len(digits))
            return ["int", digits]
        if base is str:
            text = str.__str__(value)
            self._count(depth, len(text))
            return ["str", text]
        self._count(depth, 0)
        if base is bool:
            return ["bool", value is True]
        if base is float:
            return ["float", float.hex(float.__float__(value))]
        if base is list or base is tuple or base is set or base is frozenset:
            return [base.__name__, [self.encode(item, depth + 1) for item in base.__iter__(value)]]
        if base is dict:
            pairs = dict.items(value)
            return ["dict", [[self.encode(k, depth + 1), self.encode(v, depth + 1)] for k, v in pairs]]
        if base is bytes or base is bytearray:
            data = bytes(base.__getitem__(value, slice(None)))
            self._count(depth, len(data) * 4 // 3)
            return [base.__name__, base64.b64encode(data).decode("ascii")]
        if base is complex:
            return ["complex", float.hex(complex.real.__get__(value)), float.hex(complex.imag.__get__(value))]
        if kind is _KEYS or kind is _ITEMS:  # compare like sets, as Python's own views do
            items = [self.encode(item, depth + 1) for item in value]
            return (
                ["set", items] if kind is _KEYS or all(_hashable(i) for i in value) else _other(value, kind)
            )
        return _other(value, kind)


def _other(value: Any, kind: type) -> Encoded:
    if value is None:
        return ["none"]
    if value is Ellipsis:
        return ["ellipsis"]
    if kind is range:
        return ["range", *(int.__format__(n, "x") for n in (value.start, value.stop, value.step))]
    # A Fraction or a Decimal exists only once its module was imported; the runner does not import them.
    fractions, decimal = sys.modules.get("fractions"), sys.modules.get("decimal")
    if fractions is not None and kind is fractions.Fraction:
        terms = [int.__format__(value.numerator, "x"), int.__format__(value.denominator, "x")]
        if max(len(t) for t in terms) <= MAX_FRACTION_DIGITS:
            return ["fraction", *terms]
    if decimal is not None and kind is decimal.Decimal:
        return ["decimal", decimal.Decimal.__str__(value)]
    return ["opaque", _label(kind)]


def _label(kind: type) -> str:
    module = type.__getattribute__(kind, "__module__")
    name = type.__getattribute__(kind, "__qualname__")
    text = f"{module}.{name}" if isinstance(module, str) and module != "builtins" else str(name)
    return text[:200]


def encode(value: Any) -> Encoded:
    """The tagged form of ``value``; a value too large or too deep is one ``opaque`` as a whole."""
    try:
        return _Encoder().encode(value, 0)
    except _TooLarge:
        return ["opaque", f"{_label(type(value))} (too large or too deeply nested to compare)"]

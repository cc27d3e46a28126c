"""MBPP helpers: which function the agent must write."""

from __future__ import annotations

import re

from intercode_agents.errors import DatasetError

_DEF = re.compile(r"^[ \t]*def[ \t]+([A-Za-z_]\w*)[ \t]*\(", re.M)
_CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")


def entry_point(gold: str, tests: list[str], *, where: str = "task") -> str:
    """The function the tests call that the gold defines (helpers the gold defines are skipped).

    The original InterCode took the gold's *first* ``def``, which is a helper in 40 MBPP tasks.
    """
    defined = _DEF.findall(gold)
    called = {name for test in tests for name in _CALL.findall(test)}
    candidates = list(dict.fromkeys(name for name in defined if name in called))
    if len(candidates) == 1:
        return candidates[0]
    if not candidates and len(defined) == 1:
        return defined[0]
    raise DatasetError(
        f"cannot tell the entry point of {where}: the gold defines {defined or 'no function'} "
        f"and the tests call {sorted(called) or 'nothing'}"
    )

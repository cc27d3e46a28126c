"""Reward functions for the four envs, in two modes (``intercode`` and ``strict``).

Pure functions: the env layer collects the inputs (see each module's docstring for what and how) and
gets back a :class:`RewardResult` with the reward, its parts, and whether the gold itself is corrupt.

The names below are imported on first use, so that a process that needs one module (the Python
scorer's check process, :mod:`.python_checks`) starts without loading the others (scipy, for SQL).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from intercode_agents.rewards.bash import BashSide, answer_similarity, bash_reward
    from intercode_agents.rewards.bash_changes import (
        FsChange,
        PathDigest,
        ProbeRequest,
        change_entries,
        changes_from_docker,
        in_scope,
        paths_to_probe,
    )
    from intercode_agents.rewards.ctf import ctf_reward
    from intercode_agents.rewards.python import TestOutcome, python_reward
    from intercode_agents.rewards.result import REWARD_MODES, RewardMode, RewardResult, check_mode
    from intercode_agents.rewards.sql import SqlOutcome, has_top_level_order_by, sql_reward

_HOMES = {
    "bash": ("BashSide", "answer_similarity", "bash_reward"),
    "bash_changes": (
        "FsChange",
        "PathDigest",
        "ProbeRequest",
        "change_entries",
        "changes_from_docker",
        "in_scope",
        "paths_to_probe",
    ),
    "ctf": ("ctf_reward",),
    "python": ("TestOutcome", "python_reward"),
    "result": ("REWARD_MODES", "RewardMode", "RewardResult", "check_mode"),
    "sql": ("SqlOutcome", "has_top_level_order_by", "sql_reward"),
}
_MODULE_OF = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "REWARD_MODES",
    "BashSide",
    "FsChange",
    "PathDigest",
    "ProbeRequest",
    "RewardMode",
    "RewardResult",
    "SqlOutcome",
    "TestOutcome",
    "answer_similarity",
    "bash_reward",
    "change_entries",
    "changes_from_docker",
    "check_mode",
    "ctf_reward",
    "has_top_level_order_by",
    "in_scope",
    "paths_to_probe",
    "python_reward",
    "sql_reward",
]

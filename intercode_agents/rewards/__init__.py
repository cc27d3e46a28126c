"""Reward functions for the four envs, in two modes (``intercode`` and ``strict``).

Pure functions: the env layer collects the inputs (see each module's docstring for what and how) and
gets back a :class:`RewardResult` with the reward, its parts, and whether the gold itself is corrupt.
"""

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

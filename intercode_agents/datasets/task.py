"""The task record every environment, strategy and report works from."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict


class Task(BaseModel):
    """One task: the question, the gold answer and where it runs.

    Tasks are cached per process and shared; treat them (``meta`` and ``group`` included) as read-only.
    """

    model_config = ConfigDict(frozen=True)

    id: str  # "bash/fs1/0", "sql/spider/0", "python/mbpp/11", "python/humaneval/0", "ctf/42", ...
    env: str  # the env's name: "bash", "sql", "python", "ctf", or a user env's (see envs/registry.py)
    split: str  # "fs1".."fs4", "test", "mini", "spider", "wikisql", "mbpp", "humaneval", "picoctf", ...
    query: str
    gold: str
    image: str  # short image name: "bash-fs1".."bash-fs4", "bash-fstest", "bash-mini", "sql", "python", ...
    group: dict[
        str, str
    ]  # the paper's metric groups: {"fs": "fs1"}, {"hardness": ..., "db": ...}, {"tag": ...}
    meta: dict[str, Any]  # db, db_tables, tests, test_setup_code, entry_point, tags, source, asset_dir, ...
    unavailable: str | None = None  # why the task cannot run here, or None


@dataclass(frozen=True)
class TaskDetails:
    """What an env class adds to a task read from a record: its metric groups, its meta, and why it
    cannot run here (None when it can)."""

    group: dict[str, str] = dataclasses.field(default_factory=dict)
    meta: dict[str, Any] = dataclasses.field(default_factory=dict)
    unavailable: str | None = None

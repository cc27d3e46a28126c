"""The task record every environment, strategy and report works from."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

EnvName = Literal["bash", "sql", "python", "ctf"]
ENV_NAMES: tuple[str, ...] = ("bash", "sql", "python", "ctf")


class Task(BaseModel):
    """One task: the question, the gold answer and where it runs.

    Tasks are cached per process and shared; treat them (``meta`` and ``group`` included) as read-only.
    """

    model_config = ConfigDict(frozen=True)

    id: str  # "bash/fs1/0", "sql/spider/0", "python/mbpp/11", "ctf/42", "ctf/mini/0", ...
    env: EnvName
    split: str  # "fs1".."fs4", "test", "mini", "spider", "wikisql", "mbpp", "picoctf"
    query: str
    gold: str
    image: str  # short image name: "bash-fs1".."bash-fs4", "bash-fstest", "bash-mini", "sql", "python", "ctf"
    group: dict[
        str, str
    ]  # the paper's metric groups: {"fs": "fs1"}, {"hardness": ..., "db": ...}, {"tag": ...}
    meta: dict[str, Any]  # db, db_tables, tests, test_setup_code, entry_point, tags, source, asset_dir, ...
    unavailable: str | None = None  # why the task cannot run here, or None

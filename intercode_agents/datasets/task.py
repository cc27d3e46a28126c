"""The task record every environment, strategy and report works from, and its public view.

A :class:`Task` holds everything the harness needs, the answers included: the gold, and in ``meta``
the tests, their set-up code and the scripts that prepare a sandbox. Whatever plays or lists tasks
for someone else (a user's agent, an MCP client, an adapter to another framework) hands out
:meth:`Task.public` instead: a :class:`PublicTask` with the question and the few fields a user of
the task needs to answer it (the function Python's tests call, say), which the env class names when
it reads the task (``TaskDetails.public``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class PublicTask(BaseModel):
    """What anyone playing a task may see of it: its id, env, split, question and public fields.
    Never its gold, tests, test set-up or set-up scripts."""

    model_config = ConfigDict(frozen=True)

    id: str
    env: str
    split: str
    query: str
    fields: dict[str, str | list[str]] = Field(default_factory=dict)  # {"entry_point": "second_largest"}


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
    # What a user of the task needs besides the question (Python's {"entry_point": ...}, SQL's
    # {"db": ...}), as the env class says; see :meth:`public`.
    public_fields: dict[str, str | list[str]] = Field(default_factory=dict)

    def public(self) -> PublicTask:
        """The view of this task an agent, a client or a listing gets (no gold, tests or set-up)."""
        return PublicTask(
            id=self.id, env=self.env, split=self.split, query=self.query, fields=dict(self.public_fields)
        )


@dataclass(frozen=True)
class TaskDetails:
    """What an env class adds to a task read from a record: its metric groups, its meta, and why it
    cannot run here (None when it can), and the fields of its public view that a user of the task
    needs besides the question (``Task.public``; never a gold, a test or a set-up script)."""

    group: dict[str, str] = dataclasses.field(default_factory=dict)
    meta: dict[str, Any] = dataclasses.field(default_factory=dict)
    unavailable: str | None = None
    public: dict[str, str | list[str]] = dataclasses.field(default_factory=dict)

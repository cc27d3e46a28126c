"""Task positions (SPLIT/#N) next to task ids: MBPP's own ids and the file's positions never clash."""

from __future__ import annotations

import os

import pytest

from intercode_agents.datasets import get_task, select_tasks
from intercode_agents.errors import ConfigError
from tests.cli.test_cli_run_commands import cli

os.environ.setdefault("INTERCODE_DATA", "/work/shared/intercode-data")


def test_mbpp_ids_and_positions_name_different_tasks_on_purpose() -> None:
    by_id = select_tasks("python", "python/mbpp/11")
    by_position = select_tasks("python", "python/mbpp/#10")
    assert [t.id for t in by_id] == [t.id for t in by_position] == ["python/mbpp/11"]
    assert [t.id for t in select_tasks("python", "python/mbpp/#0")] == ["python/mbpp/1"]
    assert get_task("python/mbpp/#973").id == "python/mbpp/974"
    assert [t.id for t in select_tasks("python", "python/mbpp/#0-2")] == [
        "python/mbpp/1",
        "python/mbpp/2",
        "python/mbpp/3",
    ]


def test_positions_work_alike_in_every_env() -> None:
    assert [t.id for t in select_tasks("bash", "bash/fs1/#3-4")] == ["bash/fs1/3", "bash/fs1/4"]
    assert [t.id for t in select_tasks("sql", "sql/mini/#0,sql/mini/1")] == ["sql/mini/0", "sql/mini/1"]
    assert get_task("ctf/#0").id == select_tasks("ctf", "picoctf", include_unavailable=True)[0].id


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ("python/mbpp/#974", "has positions #0-973"),
        ("python/mbpp/#5-2", "has positions"),
        ("python/nope/#1", "bad position term"),
        ("python/mbpp/#x", "bad position term"),
        ("bash/fs1/#0", "does not belong to env 'python'"),
    ],
)
def test_bad_positions(selector: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        select_tasks("python", selector)


def test_tasks_help_documents_both_forms() -> None:
    result = cli(["tasks", "--help"])
    text = " ".join(result.stdout.split())
    assert "python/mbpp/11 is MBPP task 11" in text and "python/mbpp/#10" in text

"""``eval --set KEY=VALUE``: a strategy's settings from the command line (the guarded strategy's
switches among them), each bad one a clear error before any episode runs."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from intercode_agents.cli.run_cmds import parse_settings
from intercode_agents.errors import ConfigError


def test_values_are_read_as_yaml() -> None:
    assert parse_settings(["critic=false", "max_vetoes=1", "critic_model=local", "sql_guard = true"]) == {
        "critic": False,
        "max_vetoes": 1,
        "critic_model": "local",
        "sql_guard": True,
    }


@pytest.mark.parametrize("item", ["critic", "=1"])
def test_a_setting_needs_a_key_and_a_value(item: str) -> None:
    with pytest.raises(ConfigError, match="KEY=VALUE"):
        parse_settings([item])


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "intercode_agents", "eval", "bash", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ),
    )


def test_an_unknown_setting_of_the_strategy_is_refused_by_name() -> None:
    result = cli("-s", "guarded", "-m", "local", "--tasks", "bash/mini/0", "--set", "nosuch=1")
    assert result.returncode == 2 and "nosuch" in result.stderr, result.stderr


def test_settings_need_a_strategy() -> None:
    result = cli("-m", "gold", "--tasks", "bash/mini/0", "--set", "critic=false")
    assert result.returncode == 2 and "--set configures a strategy" in result.stderr, result.stderr

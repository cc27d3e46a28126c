"""One model-resolution path: a strategy takes every spec the runner and the CLI take."""

from __future__ import annotations

import os

import pytest

from intercode_agents import make_env
from intercode_agents.errors import ConfigError
from intercode_agents.models import LocalChatModel, describe_model, resolve_model, with_seed
from intercode_agents.models.scripted import ScriptedChatModel
from intercode_agents.strategies import get_strategy

os.environ.setdefault("INTERCODE_DATA", "/work/shared/intercode-data")


@pytest.mark.slow
async def test_a_strategy_runs_the_local_model_by_its_spec() -> None:
    """The README's `strategy.run(env, "local", ...)` (a ConfigError when two resolvers disagreed)."""
    strategy = get_strategy("react", max_turns=1)
    async with make_env("sql") as env:
        trajectory = await strategy.run(env, "local", task_id="sql/mini/0")
    assert trajectory.outcome in ("solved", "failed"), trajectory.error
    assert trajectory.model == describe_model(resolve_model("local"))["name"]
    assert trajectory.model.startswith("local:") and trajectory.steps


async def test_a_strategy_refuses_a_bad_spec_with_the_resolvers_message() -> None:
    strategy = get_strategy("react", max_turns=1)
    async with make_env("sql") as env:
        with pytest.raises(ConfigError, match="unknown model provider 'nosuch'"):
            await strategy.run(env, "nosuch:model", task_id="sql/mini/0")


def test_labels_come_from_the_one_description() -> None:
    assert describe_model(ScriptedChatModel([])) == {"name": "scripted", "settings": {}}
    assert describe_model(ScriptedChatModel([], model_name="replayer"))["name"] == "scripted:replayer"


def test_a_seed_is_given_to_a_model_that_takes_one() -> None:
    local = resolve_model("local")
    seeded = with_seed(local, 7)
    assert isinstance(seeded, LocalChatModel) and seeded.seed == 7 and local.seed == 0
    assert with_seed(local, None) is local
    scripted = ScriptedChatModel([])
    assert with_seed(scripted, 7) is scripted  # it takes no seed: unchanged

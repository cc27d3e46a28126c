"""Token and cost budgets of the shipped strategies, and the budget note the model reads (real envs)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage

from intercode_agents import make_env
from intercode_agents.errors import ConfigError
from intercode_agents.models.scripted import ScriptedChatModel
from intercode_agents.strategies import get_strategy

os.environ.setdefault("INTERCODE_DATA", "/work/shared/intercode-data")
USAGE = {"input_tokens": 500, "output_tokens": 100, "total_tokens": 600}


def replies(text: str, n: int = 10, **kwargs: object) -> list[AIMessage]:
    return [AIMessage(text, usage_metadata=USAGE, **kwargs) for _ in range(n)]  # type: ignore[arg-type]


async def test_a_text_strategy_stops_when_its_tokens_are_spent() -> None:
    model = ScriptedChatModel(replies("Thought: look.\nAction: ls /testbed"))
    strategy = get_strategy("react", max_turns=8, episode_max_tokens=1000)
    async with make_env("bash") as env:
        traj = await strategy.run(env, model, task_id="bash/mini/0")
    assert traj.outcome == "tokens_exhausted" and traj.reward is None
    assert [s.action for s in traj.steps] == ["ls /testbed", "ls /testbed"]  # 600 + 600: the second crossed
    assert len(model.calls) == 2 and traj.input_tokens + traj.output_tokens == 1200
    assert traj.context["budgets"]["tokens"] == 1000


async def test_a_text_strategy_stops_when_its_cost_is_spent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text("as_of: test\nmodels:\n  pricey: {input: 1000.0, output: 1000.0}\n")
    monkeypatch.setenv("INTERCODE_AGENTS_PRICES", str(prices))
    model = ScriptedChatModel(replies("Thought: look.\nAction: ls /testbed"), model_name="pricey")
    strategy = get_strategy("try_again", max_turns=8, episode_max_cost_usd=1.0)
    async with make_env("bash") as env:
        traj = await strategy.run(env, model, task_id="bash/mini/0")
    # $0.60 a reply: the second reaches $1.20
    assert traj.outcome == "cost_exhausted" and len(model.calls) == 2
    assert "$1.2000 of its $1.0000" in (traj.error or "")
    with pytest.raises(ConfigError, match="price table does not know"):
        async with make_env("bash") as env:
            await strategy.run(env, ScriptedChatModel([], model_name="unknown-model"), task_id="bash/mini/0")


async def test_the_model_reads_what_is_left_after_each_action() -> None:
    call = {"name": "run_bash", "args": {"command": "ls /testbed"}, "id": "c1"}
    model = ScriptedChatModel([AIMessage("", tool_calls=[call], usage_metadata=USAGE)] * 3)  # type: ignore[arg-type]
    strategy = get_strategy("tool_calling", max_turns=3, episode_max_tokens=10_000, show_budget=True)
    async with make_env("bash") as env:
        traj = await strategy.run(env, model, task_id="bash/mini/0")
    notes = [s.observation.splitlines()[-1] for s in traj.steps if s.kind == "action"]
    assert notes[0] == "[budget left: 2 turns, 9,400 tokens]"
    assert notes[1] == "[budget left: 1 turn, 8,800 tokens]"
    text = get_strategy("react", max_turns=2, show_budget=True, episode_timeout_s=300)
    async with make_env("bash") as env:
        traj = await text.run(env, ScriptedChatModel(replies("Action: ls /testbed")), task_id="bash/mini/0")
    assert traj.steps[0].observation.endswith(" s]") and "[budget left: 1 turn, " in traj.steps[0].observation

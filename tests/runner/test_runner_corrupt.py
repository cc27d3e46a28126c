"""A gold that cannot run makes its task corrupt in both reward modes: listed, excluded from every
rate, never a free reward (Spider's sql/spider/164 has a gold with a syntax error)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from intercode_agents.models.scripted import ScriptedChatModel
from intercode_agents.report import write_report
from intercode_agents.runner.config import EvalConfig
from intercode_agents.runner.eval import run_eval

os.environ.setdefault("INTERCODE_DATA", "/work/shared/intercode-data")
CORRUPT = "sql/spider/164"


@pytest.mark.parametrize("reward", ["intercode", "strict"])
async def test_a_corrupt_gold_is_excluded_and_listed(tmp_path: Path, reward: str) -> None:
    out = tmp_path / "run"
    result = await run_eval(
        EvalConfig(
            env="sql",
            model="gold",
            selector=f"{CORRUPT},sql/mini/0",
            reward=reward,
            out_dir=out,
            progress=False,
        )
    )
    by_id = {r.task_id: r for r in result.records}
    assert by_id[CORRUPT].outcome == "corrupt" and by_id[CORRUPT].attempts == 1  # data, not retried
    assert by_id["sql/mini/0"].outcome == "solved"
    s = result.summary
    assert s["denominator"] == {"planned": 2, "recorded": 2, "scored": 1, "excluded": 1, "not_run": 0}
    assert s["success_rate"] == 1.0 and s["outcomes"]["corrupt"] == 1
    assert [(e["task_id"], e["reason"]) for e in s["excluded"]["episodes"]] == [(CORRUPT, "corrupt_gold")]
    md = write_report([out])[1].read_text()
    assert "## Excluded episodes (1)" in md and f"| {CORRUPT} | corrupt gold" in md.replace("\\_", "_")


async def test_an_empty_answer_to_a_corrupt_gold_earns_nothing_in_intercode_mode(tmp_path: Path) -> None:
    # The original reward gives 1.0 to an empty result when the gold's query fails (both "empty").
    agent = ScriptedChatModel(["Action: SELECT 1 FROM (SELECT 1 AS x) AS t WHERE x = 0", "Action: submit"])
    result = await run_eval(
        EvalConfig(
            env="sql",
            strategy="react",
            model=agent,
            selector=CORRUPT,
            out_dir=tmp_path / "run",
            progress=False,
        )
    )
    (traj,) = result.records
    assert traj.outcome == "corrupt" and not traj.solved and traj.reward is None
    assert traj.reward_parts["unscored_reward"] == 1.0  # what the original maths would have given
    assert result.summary["n_solved"] == 0 and result.summary["success_rate"] is None
    assert result.summary["excluded"]["counts"]["corrupt_gold"] == 1

"""End to end (issue 13, finding 6): an agent that destroys its own sandbox before submitting fails the
episode, and its failure counts; it is never an env error, never excluded, never retried.

Both halves take part: the envs report ``sandbox_lost`` in the reward parts instead of raising when
the agent killed its own shell or sandbox, and the runner counts such an episode as failed and tags it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from intercode_agents import make_env
from intercode_agents.datasets import get_task
from intercode_agents.metrics.failure_modes import failure_tags
from intercode_agents.models.scripted import ScriptedChatModel
from intercode_agents.runner.config import EvalConfig
from intercode_agents.runner.direct import play_direct, scripted
from intercode_agents.runner.eval import run_eval
from intercode_agents.runner.run_dir import read_records

os.environ.setdefault("INTERCODE_DATA", "/work/shared/intercode-data")

SOLVE = "grep -c ERROR /testbed/logs/app.log"  # bash/mini/0, solved honestly
SABOTAGE = ("kill -9 -1", "echo not-the-answer")  # then submit


def agent(strategy: str) -> ScriptedChatModel:
    """Solves bash/mini/0; on any other task kills every process it can, then submits a wrong answer."""

    def reply(messages: list[BaseMessage]) -> str | AIMessage:
        question = next(str(m.content) for m in messages if isinstance(m, HumanMessage))
        turn = sum(isinstance(m, AIMessage) for m in messages)
        plan = [SOLVE] if "contain the word ERROR" in question else list(SABOTAGE)
        action = plan[turn] if turn < len(plan) else None
        if strategy == "tool_calling":
            call = (
                {"name": "run_bash", "args": {"command": action}}
                if action
                else {"name": "submit", "args": {}}
            )
            return AIMessage(content="", tool_calls=[{**call, "id": f"call-{turn}"}])
        return f"Action: {action}" if action else "Action: submit"

    return ScriptedChatModel([reply] * 40)


@pytest.mark.parametrize("strategy", ["react", "try_again", "tool_calling"])
async def test_sabotage_counts_as_failure_in_a_real_run(tmp_path: Path, strategy: str) -> None:
    out = tmp_path / "run"
    result = await run_eval(
        EvalConfig(
            env="bash",
            strategy=strategy,
            model=agent(strategy),
            selector="bash/mini/0,bash/mini/1,bash/mini/2",
            turns=5,
            out_dir=out,
            progress=False,
        )
    )
    records = {r.task_id: r for r in read_records(out / "trajectories.jsonl")[0]}
    assert records["bash/mini/0"].outcome == "solved"
    for task_id in ("bash/mini/1", "bash/mini/2"):
        traj = records[task_id]
        assert (traj.outcome, traj.attempts) == ("failed", 1), traj.error
        assert traj.reward_parts.get("sandbox_lost") is True and "sandbox_destroyed" in failure_tags(traj)
    s = result.summary
    assert s["success_rate"] == pytest.approx(1 / 3)  # 100% when the sabotage was an env error
    assert s["denominator"] == {"planned": 3, "recorded": 3, "scored": 3, "excluded": 0, "not_run": 0}
    assert s["failure_modes"]["counts"]["sandbox_destroyed"] == 2


async def test_a_scripted_kill_then_submit_is_a_tagged_failure() -> None:
    task = get_task("bash/mini/1")
    async with make_env("bash") as env:
        traj = await play_direct(env, task, scripted([*SABOTAGE, "submit"]), model="script")
    assert traj.outcome == "failed", traj.error
    assert failure_tags(traj) == [t for t in failure_tags(traj) if t] and "sandbox_destroyed" in failure_tags(
        traj
    )
    assert re.search(r"\S", str(traj.reward_parts.get("sandbox_lost_reason") or ""))

"""What an agent sees of a reward's parts (envs/reward_view.py): its state against the gold, never the
gold's own contents, wherever it can see them (the submit tool's artifact, the human player's screen;
the MCP server's answers are in test_mcp_integrity.py); the records keep every part.

bash/mini/6's gold writes /testbed/data/total.txt: submitted before any action, the Bash reward's
``missing_paths`` names that file (the gold's change), which an agent must not read.
"""

from __future__ import annotations

import io

import pytest
from langchain_core.messages import AIMessage
from rich.console import Console

from intercode_agents import make_env
from intercode_agents.envs.bash.env import BashEnv
from intercode_agents.envs.bash.reward import AGENT_PARTS as BASH_AGENT_PARTS
from intercode_agents.envs.ctf.env import CtfEnv
from intercode_agents.envs.ctf.reward import AGENT_PARTS as CTF_AGENT_PARTS
from intercode_agents.envs.python.env import PythonEnv
from intercode_agents.envs.python.reward import AGENT_PARTS as PYTHON_AGENT_PARTS
from intercode_agents.envs.reward_view import SANDBOX_PARTS, agent_parts, visible_parts
from intercode_agents.envs.sql.env import SqlEnv
from intercode_agents.envs.sql.reward import AGENT_PARTS as SQL_AGENT_PARTS
from intercode_agents.models.scripted import ScriptedChatModel
from intercode_agents.reward import RewardResult
from intercode_agents.runner.human import TerminalHuman
from intercode_agents.strategies import get_strategy
from intercode_agents.tools import EnvToolkit

TASK = "bash/mini/6"
GOLD_CHANGE = "?? /testbed/data/total.txt"
# What describes only the gold, per reward: never in any list.
GOLD_ONLY = {
    "missing_changes",
    "missing_paths",
    "content_checked",
    "wrong_content_paths",
    "gold_failed",
    "gold_rows",
    "gold_empty",
    "order_matters",
    "unscored_reward",
    "tests",
    "dropped_gold_failures",
}


class OwnReward(BashEnv):
    """A user's env on the Bash env's sandbox with a reward of its own (as the jq example's)."""

    async def _score(self, submission: str) -> RewardResult:
        return RewardResult(0.0, {"answer": "the gold's own text", "match": False})


class NamedOwnReward(OwnReward):
    agent_parts = frozenset({"match"})


class SameReward(BashEnv):
    """A Bash env with other options but the Bash reward."""


def test_each_reward_names_what_its_agent_may_see_and_never_a_gold_only_part() -> None:
    for env_class, listed in (
        (BashEnv, BASH_AGENT_PARTS),
        (SqlEnv, SQL_AGENT_PARTS),
        (CtfEnv, CTF_AGENT_PARTS),
        (SameReward, BASH_AGENT_PARTS),
    ):
        assert visible_parts(env_class) == listed | SANDBOX_PARTS
    assert visible_parts(PythonEnv) <= PYTHON_AGENT_PARTS | SANDBOX_PARTS
    every = BASH_AGENT_PARTS | SQL_AGENT_PARTS | PYTHON_AGENT_PARTS | CTF_AGENT_PARTS | SANDBOX_PARTS
    assert not every & GOLD_ONLY


def test_a_reward_of_its_own_shows_nothing_until_its_class_names_its_parts() -> None:
    parts = {"answer": "the gold's own text", "match": False, "sandbox_lost": True}
    # "answer" is a part the Bash list shows, but this class's reward means something else by it
    assert agent_parts(OwnReward, parts) == {"sandbox_lost": True}
    assert agent_parts(NamedOwnReward, parts) == {"match": False, "sandbox_lost": True}


@pytest.fixture(scope="module")
async def bash_env():
    async with make_env("bash") as env:
        yield env


async def test_the_submit_tools_artifact_carries_the_agents_view_and_the_record_every_part(bash_env) -> None:
    await bash_env.reset(TASK)
    _, submit = EnvToolkit(env=bash_env).get_tools()
    done = await submit.ainvoke({"type": "tool_call", "name": "submit", "args": {}, "id": "c1"})
    assert done.artifact["reward"] < 1.0
    assert set(done.artifact["reward_parts"]) == BASH_AGENT_PARTS
    assert "total.txt" not in str(done.artifact)
    assert GOLD_CHANGE in bash_env.submitted.parts["missing_paths"]  # the harness's copy

    # A strategy that submits through the tool records every part all the same.
    model = ScriptedChatModel(
        [AIMessage(content="", tool_calls=[{"name": "submit", "args": {}, "id": "s", "type": "tool_call"}])]
    )
    trajectory = await get_strategy("tool_calling", max_turns=3).run(bash_env, model, task_id=TASK)
    assert GOLD_CHANGE in trajectory.reward_parts["missing_paths"]


async def test_try_again_feeds_back_the_reward_only(bash_env) -> None:
    model = ScriptedChatModel(["```bash\nls /testbed/data\n```", "```bash\nsubmit\n```"])
    trajectory = await get_strategy("try_again", max_turns=2).run(bash_env, model, task_id=TASK)
    fed_back = model.calls[1][-1].text
    assert fed_back.startswith("Output:") and "Reward: " in fed_back
    assert not any(part in fed_back for part in ("missing", "file_diff", "answer_similarity"))
    assert GOLD_CHANGE in trajectory.reward_parts["missing_paths"]


async def test_the_human_player_sees_the_agents_view(bash_env) -> None:
    model = ScriptedChatModel(["```bash\nsubmit\n```"])
    trajectory = await get_strategy("react", max_turns=1).run(bash_env, model, task_id=TASK)
    screen = io.StringIO()
    TerminalHuman(console=Console(file=screen, width=400)).show_result(trajectory, bash_env)
    shown = screen.getvalue()
    assert shown.startswith("Reward: ") and "file_diff=" in shown
    assert "total.txt" not in shown and "missing" not in shown

"""A model whose context window the episode filled is the agent's own limit: the episode is submitted
as it stands and scored (tagged ``context_exhausted``), never a model_error left out of the rate."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from intercode_agents.metrics.failure_modes import failure_tags
from intercode_agents.models.scripted import ScriptedChatModel
from intercode_agents.runner.config import EvalConfig
from intercode_agents.runner.eval import run_eval
from intercode_agents.strategies.episode import context_full

os.environ.setdefault("INTERCODE_DATA", "/work/shared/intercode-data")
OPENAI = (
    "Error code: 400 - This model's maximum context length is 8192 tokens. However, your messages "
    "resulted in 9001 tokens. Please reduce the length of the messages. (context_length_exceeded)"
)


class BadRequestError(Exception):
    """Named like the providers' 400 errors (not transient, so not retried)."""


class RateLimitError(Exception):
    """Named like the providers' 429 errors (transient)."""


@pytest.mark.parametrize(
    ("message", "full"),
    [
        (OPENAI, True),
        ("prompt is too long: 210000 tokens > 200000 maximum", True),  # Anthropic
        ("request (430 tokens) exceeds the available context size (256 tokens), try increasing it", True),
        ("Rate limit reached for requests", False),
        ("invalid API key", False),
    ],
)
def test_context_overflow_messages(message: str, full: bool) -> None:
    wrapped = RuntimeError("the model call failed after 1 attempt(s)")
    wrapped.__cause__ = BadRequestError(message)
    assert context_full(wrapped) is full
    wrapped.__cause__ = RateLimitError(message)  # a provider's rate limit is never the agent's limit
    assert context_full(wrapped) is False


@pytest.mark.parametrize("strategy", ["react", "try_again", "tool_calling"])
async def test_a_full_context_submits_the_episode_as_it_stands(tmp_path: Path, strategy: str) -> None:
    first = "ls /testbed/logs"  # not the answer: the listing is what gets submitted
    if strategy == "tool_calling":
        from langchain_core.messages import AIMessage

        call = {"name": "run_bash", "args": {"command": first}, "id": "c1"}
        script: list[object] = [AIMessage(content="", tool_calls=[call]), BadRequestError(OPENAI)]
    else:
        script = [f"Action: {first}", BadRequestError(OPENAI)]
    result = await run_eval(
        EvalConfig(
            env="bash",
            strategy=strategy,
            model=ScriptedChatModel(script),
            selector="bash/mini/0,bash/mini/3",
            out_dir=tmp_path / "run",
            progress=False,
        )
    )
    by_id = {r.task_id: r for r in result.records}
    full = by_id["bash/mini/0"]
    assert (full.outcome, full.context["context_exhausted"]) == ("failed", True), full.error
    assert full.reward is not None and "context_exhausted" in failure_tags(full)
    assert full.steps[-1].kind == "submit" and "context window is full" in (full.steps[-1].thought or "")
    assert [s.action for s in full.steps if s.kind == "action"] == [first]
    broken = by_id["bash/mini/3"]
    assert broken.outcome == "model_error"  # a script that ran out is the "provider" failing
    assert result.summary["n_scored"] == 1 and result.summary["excluded"]["counts"]["model_error"] == 1


@pytest.mark.slow
async def test_the_local_model_with_a_tiny_context_is_scored_not_excluded(tmp_path: Path) -> None:
    from intercode_agents.models.local import LocalChatModel

    model = LocalChatModel(n_ctx=256, max_tokens=16)  # the prompt alone is longer
    result = await run_eval(
        EvalConfig(
            env="bash",
            strategy="react",
            model=model,
            selector="bash/mini/0",
            out_dir=tmp_path / "run",
            progress=False,
        )
    )
    (traj,) = result.records
    assert traj.outcome == "failed", traj.error
    assert traj.reward is not None and "context_exhausted" in failure_tags(traj)
    assert result.summary["n_scored"] == 1 and result.summary["success_rate"] == 0.0

"""The local model's token report (``logprobs=True``): the reply conversion (fast), and a tiny Try Again
episode with the real llama.cpp model and ``record_tokens`` (slow: about 100 s on a busy 2-core
machine), whose ids are exactly what llama.cpp counted and rebuild into one masked sequence."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage

from intercode_agents.envs import make_env
from intercode_agents.models import resolve_model
from intercode_agents.models.local import LocalChatModel
from intercode_agents.models.tokens import reported_tokens
from intercode_agents.runner.token_sequences import episode_sequence
from intercode_agents.strategies import get_strategy

REPLY = {
    "choices": [
        {
            "finish_reason": "stop",
            "message": {"role": "assistant", "content": "OK"},
            "logprobs": {
                "content": [
                    {"id": 3925, "token": "OK", "bytes": [79, 75], "logprob": -0.1, "top_logprobs": []},
                    {"id": 151645, "token": "", "bytes": [], "logprob": -0.01, "top_logprobs": []},
                ]
            },
        }
    ],
    "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    "prompt_token_ids": [1, 2, 3],
}


def test_a_reply_with_logprobs_reports_its_tokens_in_the_convention() -> None:
    model = LocalChatModel()
    payload = model._payload([HumanMessage("ok?")], None, {"logprobs": True})
    assert payload["logprobs"] is True
    message = model._to_result(REPLY, payload).generations[0].message
    found = reported_tokens(message)
    assert found is not None and found.prompt_ids == [1, 2, 3] and found.completion_ids == [3925, 151645]
    assert found.logprobs == [-0.1, -0.01] and found.finish_reason == "stop"
    miscounted = REPLY | {"prompt_token_ids": [1, 2]}  # not what the model said it read: not reported
    message = model._to_result(miscounted, payload).generations[0].message
    assert reported_tokens(message) is None and "3 tokens" in message.response_metadata["token_ids_problem"]
    plain = model._payload([HumanMessage("ok?")], None, {})
    assert (
        "logprobs" not in plain
        and reported_tokens(model._to_result(REPLY, plain).generations[0].message) is None
    )


@pytest.mark.slow
async def test_a_local_model_episode_keeps_exact_token_ids_that_rebuild_one_sequence() -> None:
    model = resolve_model("local", max_tokens=48)
    strategy = get_strategy("try_again", max_turns=2, demos=False, record_tokens=True)
    async with make_env("bash") as env:  # bash/mini/2: the model's first guess rarely solves it
        traj = await strategy.run(env, model, task_id="bash/mini/2")
    assert traj.outcome in ("solved", "failed"), traj.error
    calls = traj.turn_tokens
    assert calls and "calls_without_tokens" not in traj.context
    assert sum(len(c.prompt_ids) for c in calls) == traj.input_tokens  # what llama.cpp counted, exactly
    assert sum(len(c.completion_ids) for c in calls) == traj.output_tokens
    assert all(c.logprobs is not None and len(c.logprobs) == len(c.completion_ids) for c in calls)
    assert all(lp <= 0.0 for c in calls for lp in c.logprobs or [])
    stops = {c.completion_ids[-1] for c in calls if c.finish_reason == "stop"}
    assert len(stops) <= 1  # a reply that ended by itself ends with the model's end-of-turn token
    sequence = episode_sequence(traj)  # the real chat template keeps every earlier turn token for token
    assert sum(sequence.completion_mask) == traj.output_tokens
    assert len(sequence.prompt_ids) == len(calls[0].prompt_ids)

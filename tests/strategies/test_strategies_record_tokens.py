"""Token-level records (``record_tokens``): a chat model that reports its token ids and logprobs, as the
convention of ``models/tokens.py`` says, has every call kept in ``Trajectory.turn_tokens``, and the
episode rebuilds into the one masked sequence a trainer learns from (the env's observations at mask
0). Off by default; a model that reports nothing leaves a counted gap; a strategy that drops old turns
gives per-call samples instead. The fake model's "tokenizer" is one id per character, so every id can
be read back as text."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from intercode_agents.envs import make_env
from intercode_agents.models.scripted import ScriptedChatModel
from intercode_agents.models.tokens import reported_tokens
from intercode_agents.runner.token_sequences import NotAPrefix, episode_sequence, turn_samples
from intercode_agents.strategies import get_strategy

ROLES = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}
END = "<|end|>"


def template(messages: list[BaseMessage]) -> str:
    """A chat template: each message framed by its role, then the assistant's turn opened."""
    return "".join(f"<|{ROLES[m.type]}|>{m.text}{END}" for m in messages) + "<|assistant|>"


def ids(text: str) -> list[int]:
    return [ord(char) for char in text]


def text(token_ids: list[int]) -> str:
    return "".join(chr(token) for token in token_ids)


class TokenReportingModel(BaseChatModel):
    """Plays ``replies`` and reports each call's token ids and logprobs in ``response_metadata``
    when called with ``logprobs=True`` (as llama.cpp or vLLM do)."""

    replies: list[str]
    options: list[dict[str, Any]] = Field(default_factory=list)  # the call options of each call

    @property
    def _llm_type(self) -> str:
        return "token-reporting-fake"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.options.append(dict(kwargs))
        reply = self.replies[len(self.options) - 1]
        meta: dict[str, Any] = {"finish_reason": "stop"}
        if kwargs.get("logprobs"):
            completion = ids(reply + END)  # the model's end-of-turn token is its own
            meta |= {
                "prompt_token_ids": ids(template(messages)),
                "logprobs": {
                    "content": [
                        {"id": token, "token": chr(token), "logprob": -(i % 7) / 10}
                        for i, token in enumerate(completion)
                    ]
                },
            }
        return ChatResult(generations=[ChatGeneration(message=AIMessage(reply, response_metadata=meta))])


def action(command: str) -> str:
    return f"Thought: this answers it.\nAction:\n```bash\n{command}\n```"


GOLD = "grep -c ERROR /testbed/logs/app.log"  # bash/mini/0


async def play(strategy: str, model: BaseChatModel, **settings: Any) -> Any:
    async with make_env("bash") as env:
        return await get_strategy(strategy, **settings).run(env, model, task_id="bash/mini/0")


async def test_every_call_is_kept_and_the_episode_rebuilds_into_one_masked_sequence() -> None:
    replies = [action("ls /testbed/logs"), action(GOLD), "Thought: done.\nAction: submit"]
    model = TokenReportingModel(replies=replies)
    traj = await play("react", model, max_turns=4, record_tokens=True)
    assert traj.solved and [c.turn for c in traj.turn_tokens] == [1, 2, 3]
    assert all(options.get("logprobs") is True for options in model.options)

    sequence = episode_sequence(traj)
    assert text(sequence.prompt_ids).endswith("<|assistant|>") and "Task: " in text(sequence.prompt_ids)
    written = [t for t, m in zip(sequence.completion_ids, sequence.completion_mask, strict=True) if m]
    assert text(written) == "".join(reply + END for reply in replies)  # the model's tokens, trained on
    added = [t for t, m in zip(sequence.completion_ids, sequence.completion_mask, strict=True) if not m]
    shown = text(added)  # the env's observations in the strategy's template, never trained on
    assert shown.count("<|user|>Observation:") == 2 and "app.log" in shown and "\n2\n" in shown
    assert sequence.logprobs is not None and len(sequence.logprobs) == len(sequence.completion_ids)
    first = traj.turn_tokens[0]
    assert sequence.logprobs[: len(first.completion_ids)] == first.logprobs
    assert all(lp == 0.0 for lp, m in zip(sequence.logprobs, sequence.completion_mask, strict=True) if not m)
    last = traj.turn_tokens[-1]  # the whole episode is the last call's prompt and completion
    assert sequence.prompt_ids + sequence.completion_ids == last.prompt_ids + last.completion_ids


async def test_off_by_default_the_model_is_not_asked_and_nothing_is_kept() -> None:
    model = TokenReportingModel(replies=[action(GOLD), "Action: submit"])
    traj = await play("react", model, max_turns=3)
    assert traj.solved and traj.turn_tokens == []
    assert all("logprobs" not in options for options in model.options)


async def test_a_model_that_reports_nothing_leaves_a_counted_gap() -> None:
    model = ScriptedChatModel([action(GOLD), "Action: submit"])
    traj = await play("react", model, max_turns=3, record_tokens=True)
    assert traj.solved and traj.turn_tokens == [] and traj.context["calls_without_tokens"] == 2
    with pytest.raises(NotAPrefix, match="no token ids"):
        episode_sequence(traj)


async def test_a_strategy_that_drops_old_turns_gives_per_call_samples() -> None:
    replies = [action("ls /testbed"), action("ls /testbed/logs"), action(GOLD), "Action: submit"]
    model = TokenReportingModel(replies=replies)
    traj = await play("try_again", model, max_turns=5, history_turns=1, record_tokens=True)
    with pytest.raises(NotAPrefix, match="does not continue"):
        episode_sequence(traj)
    samples = turn_samples(traj)
    assert len(samples) == len(model.options) and all(s.logprobs for s in samples)
    assert text(samples[-1].completion_ids) == replies[len(samples) - 1] + END


def test_the_reading_of_reported_tokens() -> None:
    vllm = AIMessage("x", response_metadata={"prompt_token_ids": [1, 2], "token_ids": [7, 8]})
    assert reported_tokens(vllm).completion_ids == [7, 8] and reported_tokens(vllm).logprobs is None
    entries = [{"token": "a", "logprob": -0.5, "id": 5}, {"token": "b", "logprob": -0.25, "id": 6}]
    llama = AIMessage("ab", response_metadata={"prompt_token_ids": [1], "logprobs": {"content": entries}})
    found = reported_tokens(llama)
    assert found is not None and found.completion_ids == [5, 6] and found.logprobs == [-0.5, -0.25]
    openai_only = AIMessage("ab", response_metadata={"logprobs": {"content": entries}})  # no prompt ids
    assert reported_tokens(openai_only) is None
    mismatched = {"prompt_token_ids": [1], "completion_token_ids": [5], "logprobs": {"content": entries}}
    assert reported_tokens(AIMessage("a", response_metadata=mismatched)).logprobs is None
    assert (
        reported_tokens(AIMessage("a", response_metadata={"prompt_token_ids": ["1"], "token_ids": [2]}))
        is None
    )

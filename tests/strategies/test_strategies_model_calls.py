"""Model calls: transient errors are retried, others are not, and token usage is read."""

from __future__ import annotations

import httpx
import pytest
from langchain_core.messages import AIMessage, HumanMessage

from intercode_agents.models.calls import ModelCallFailed, call_model, is_transient
from intercode_agents.models.scripted import ScriptedChatModel

PROMPT = [HumanMessage(content="hi")]


class RateLimitError(Exception):
    """Named like the providers' rate-limit errors (openai.RateLimitError, anthropic.RateLimitError)."""


class ApiStatusError(Exception):
    def __init__(self, status_code: int) -> None:
        super().__init__(f"status {status_code}")
        self.status_code = status_code


@pytest.mark.parametrize(
    "exc",
    [
        TimeoutError("read timed out"),
        ConnectionResetError("reset by peer"),
        RateLimitError("slow down"),
        ApiStatusError(429),
        ApiStatusError(503),
        httpx.ConnectError("refused"),
        httpx.ReadTimeout("slow"),
    ],
)
def test_transient_errors(exc: Exception) -> None:
    assert is_transient(exc)


@pytest.mark.parametrize(
    "exc", [ValueError("bad request"), ApiStatusError(401), ApiStatusError(400), KeyError("x")]
)
def test_permanent_errors(exc: Exception) -> None:
    assert not is_transient(exc)


async def test_transient_error_is_retried_and_usage_is_read() -> None:
    reply = AIMessage(
        content="ok", usage_metadata={"input_tokens": 11, "output_tokens": 3, "total_tokens": 14}
    )
    model = ScriptedChatModel([RateLimitError("429"), TimeoutError("slow"), reply])
    result = await call_model(model, PROMPT, retries=3, initial_wait_s=0.01, max_wait_s=0.02)
    assert result.text == "ok"
    assert result.attempts == 3
    assert (result.input_tokens, result.output_tokens) == (11, 3)


async def test_persistent_transient_error_gives_up_after_the_retries() -> None:
    model = ScriptedChatModel([TimeoutError("slow")] * 5)
    with pytest.raises(ModelCallFailed, match=r"after 3 attempt\(s\) \(transient TimeoutError: slow\)"):
        await call_model(model, PROMPT, retries=2, initial_wait_s=0.01, max_wait_s=0.02)
    assert len(model.calls) == 3


async def test_permanent_error_is_not_retried() -> None:
    model = ScriptedChatModel([ValueError("invalid api key"), "never reached"])
    with pytest.raises(ModelCallFailed, match=r"after 1 attempt\(s\) \(ValueError: invalid api key\)"):
        await call_model(model, PROMPT, retries=3, initial_wait_s=0.01)
    assert len(model.calls) == 1

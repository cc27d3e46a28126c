"""Calling a chat model: retries on transient errors and token accounting.

Model specs are resolved in one place, :func:`intercode_agents.models.resolve_model`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable
from tenacity import (
    AsyncRetrying,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
    wait_random,
)

from intercode_agents.errors import IntercodeError

# Class names (anywhere in the exception's MRO) of provider errors worth retrying.
_TRANSIENT_MARKERS = (
    "RateLimit",
    "Timeout",
    "APIConnection",
    "ConnectError",
    "ConnectionError",
    "ServiceUnavailable",
    "Overloaded",
    "InternalServerError",
    "TooManyRequests",
    "RemoteProtocolError",
)
_TRANSIENT_STATUS = {408, 409, 429}


class ModelCallFailed(IntercodeError):
    """The chat model did not answer (after the retries, for transient errors)."""


def is_transient(exc: BaseException) -> bool:
    """Rate limits, timeouts, dropped connections and 5xx answers: errors a retry may fix."""
    if isinstance(exc, TimeoutError | ConnectionError):
        return True
    status = getattr(exc, "status_code", None) or getattr(getattr(exc, "response", None), "status_code", None)
    if isinstance(status, int) and (status in _TRANSIENT_STATUS or status >= 500):
        return True
    names = [cls.__name__ for cls in type(exc).__mro__]
    return any(marker in name for name in names for marker in _TRANSIENT_MARKERS)


@dataclass(frozen=True)
class ModelReply:
    """One answer of the model, with its text and the tokens it cost."""

    message: AIMessage
    input_tokens: int = 0
    output_tokens: int = 0
    attempts: int = 1

    @property
    def text(self) -> str:
        return self.message.text


def _usage(message: AIMessage) -> tuple[int, int]:
    usage = message.usage_metadata
    if usage is None:
        return 0, 0
    return int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)


async def call_model(
    model: Runnable[Any, Any],
    messages: Sequence[BaseMessage],
    *,
    retries: int = 3,
    initial_wait_s: float = 1.0,
    max_wait_s: float = 30.0,
) -> ModelReply:
    """``model.ainvoke(messages)``, retried up to ``retries`` times on transient errors.

    Raises :class:`ModelCallFailed` (with the cause) when the model keeps failing, fails for another
    reason, or answers with something other than an AI message.
    """
    attempts = 0
    retrying = AsyncRetrying(
        retry=retry_if_exception(is_transient),
        stop=stop_after_attempt(retries + 1),
        wait=wait_exponential(multiplier=initial_wait_s, max=max_wait_s) + wait_random(0, initial_wait_s),
        reraise=True,
    )
    try:
        async for attempt in retrying:
            with attempt:
                attempts += 1
                message = await model.ainvoke(list(messages))
    except Exception as exc:
        kind = "transient " if is_transient(exc) else ""
        raise ModelCallFailed(
            f"the model call failed after {attempts} attempt(s) ({kind}{type(exc).__name__}: {exc})"
        ) from exc
    if not isinstance(message, AIMessage):
        raise ModelCallFailed(f"the model answered with a {type(message).__name__}, not an AI message")
    return ModelReply(message, *_usage(message), attempts=attempts)

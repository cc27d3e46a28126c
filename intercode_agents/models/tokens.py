"""Token ids and log-probabilities a chat model reports with its reply, read from one convention.

A trainer learns from the exact tokens the policy read and wrote, not from text it would tokenize
again (a reply tokenized anew need not give the ids the model sampled). Providers report them in
different places; a chat model reports them to the harness in its reply's ``response_metadata``:

- ``prompt_token_ids``: the ids of the whole prompt the model read (vLLM's name for them);
- ``completion_token_ids`` (or vLLM's ``token_ids``): the ids it wrote, its end-of-turn token included
  when it stopped by itself;
- ``logprobs``: OpenAI's shape, ``{"content": [{"token": ..., "logprob": ..., "id": ...}, ...]}``, one
  entry per completion token (``id``, or ``token_id``, gives the ids where the list above is missing:
  llama.cpp writes ``id``).

The local model (:class:`~intercode_agents.models.local.LocalChatModel`) fills all three when it is
called with ``logprobs=True``; a LangChain OpenAI-compatible model gives ``logprobs`` with the same
option and the ids where its server returns them. A reply without both id lists reports nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage


@dataclass(frozen=True)
class ReportedTokens:
    """The tokens of one model call: the prompt's ids, the completion's ids and their log-probabilities."""

    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float] | None = None  # None when not reported, or not one per completion token
    finish_reason: str | None = None


def _ids(value: object) -> list[int] | None:
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        if all(isinstance(item, int) and not isinstance(item, bool) for item in value):
            return list(value)
    return None


def _logprob_entries(meta: Mapping[str, Any]) -> list[Mapping[str, Any]] | None:
    logprobs = meta.get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, Mapping) else None
    if isinstance(content, list) and all(isinstance(entry, Mapping) for entry in content):
        return content
    return None


def reported_tokens(message: AIMessage) -> ReportedTokens | None:
    """The tokens ``message`` reports (see the module docstring), or None when it reports no ids."""
    meta = message.response_metadata or {}
    entries = _logprob_entries(meta)
    completion = _ids(meta.get("completion_token_ids", meta.get("token_ids")))
    if completion is None and entries is not None:
        completion = _ids([entry.get("id", entry.get("token_id")) for entry in entries])
    prompt = _ids(meta.get("prompt_token_ids"))
    if prompt is None or completion is None:
        return None
    logprobs = None
    if entries is not None and len(entries) == len(completion):
        values = [entry.get("logprob") for entry in entries]
        if all(isinstance(value, int | float) for value in values):
            logprobs = [float(value) for value in values]  # type: ignore[arg-type]
    reason = meta.get("finish_reason")
    return ReportedTokens(prompt, completion, logprobs, reason if isinstance(reason, str) else None)

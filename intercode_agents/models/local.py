"""``LocalChatModel``: a LangChain chat model served in-process by llama.cpp (xllamacpp).

The default weights are Qwen2.5-Coder-1.5B-Instruct (GGUF, Q4_K_M), fetched and verified on first
use (see :mod:`intercode_agents.models.weights`). Tool calls that the model writes as JSON text are
turned into native ``tool_calls`` so LangChain agents work with it. Called with ``logprobs=True``
(``model.bind(logprobs=True)``, as a strategy with ``record_tokens`` does), a reply reports its prompt
and completion token ids and the completion's log-probabilities (:mod:`intercode_agents.models.tokens`).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.language_models.base import LangSmithParams
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    InvalidToolCall,
    ToolCall,
    convert_to_openai_messages,
)
from langchain_core.messages.ai import InputTokenDetails, UsageMetadata
from langchain_core.messages.tool import invalid_tool_call, tool_call
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, Field, PrivateAttr, field_validator

from intercode_agents.errors import ConfigError
from intercode_agents.models.local_server import LocalServer, ServerKey, default_threads, get_server
from intercode_agents.models.text_tool_calls import parse_text_tool_calls
from intercode_agents.models.weights import DEFAULT_WEIGHTS, resolve_weights

_PER_CALL_SETTINGS = ("temperature", "max_tokens", "seed", "top_p")


def _log_to_stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class LocalChatModel(BaseChatModel):
    """A chat model over a local GGUF file. Settings map onto llama.cpp's OpenAI-style request."""

    model_config = ConfigDict(extra="forbid")

    model_path: str | None = None
    """A GGUF file; None means the default weights, fetched into the cache on first use."""
    temperature: float = Field(default=0.0, ge=0.0)
    max_tokens: int | None = Field(default=1024, gt=0)
    seed: int | None = 0
    top_p: float | None = Field(default=None, gt=0.0, le=1.0)
    n_ctx: int = Field(default=8192, ge=256)
    """Context window of each request, in tokens (prompt plus answer)."""
    n_parallel: int = Field(default=1, ge=1)
    """Requests decoded together; more slots trade memory for throughput under concurrency."""
    n_threads: int = Field(default_factory=default_threads, ge=1)
    stop: list[str] | None = None

    _server: LocalServer | None = PrivateAttr(default=None)

    @field_validator("model_path")
    @classmethod
    def _non_empty(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("model_path must be a GGUF file path or None for the default model")
        return value

    @property
    def _llm_type(self) -> str:
        return "intercode-local-llamacpp"

    @property
    def model_name(self) -> str:
        """The weights' file name without its extension, e.g. ``qwen2.5-coder-1.5b-instruct-q4_k_m``."""
        name = Path(self.model_path).name if self.model_path else DEFAULT_WEIGHTS.file_name
        return name.removesuffix(".gguf")

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name, **self.settings()}

    def settings(self) -> dict[str, Any]:
        """The settings that shape answers, for trajectory records."""
        return {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "top_p": self.top_p,
            "n_ctx": self.n_ctx,
            "stop": self.stop,
        }

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        params = super()._get_ls_params(stop=stop, **kwargs)
        params["ls_provider"] = "local"
        params["ls_model_name"] = self.model_name
        return params

    def load(self, *, log: Callable[[str], None] = _log_to_stderr) -> LocalServer:
        """Resolve the weights and load (or reuse) the server; called by the first request."""
        if self._server is None:
            weights = resolve_weights(self.model_path, log=log)
            key = ServerKey(weights, self.n_ctx, self.n_parallel, self.n_threads)
            self._server = get_server(key)
        return self._server

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools (sent in OpenAI format). ``tool_choice``: "auto", "none", "any"/"required" or a name."""
        formatted = [convert_to_openai_tool(tool) for tool in tools]
        names = [tool["function"]["name"] for tool in formatted]
        if tool_choice in ("any", "required"):
            kwargs["tool_choice"] = "required"
        elif tool_choice in (None, "auto", "none"):
            if tool_choice:
                kwargs["tool_choice"] = tool_choice
        elif tool_choice in names:  # llama.cpp takes no named choice: offer only that tool, required
            formatted = [tool for tool in formatted if tool["function"]["name"] == tool_choice]
            kwargs["tool_choice"] = "required"
        else:
            raise ConfigError(f"tool_choice {tool_choice!r} is not one of the bound tools {names}")
        return self.bind(tools=formatted, **kwargs)

    def _payload(self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]) -> dict:
        payload: dict[str, Any] = {"messages": convert_to_openai_messages(messages)}
        for name in _PER_CALL_SETTINGS:
            value = kwargs.pop(name, getattr(self, name))
            if value is not None:
                payload[name] = value
        stops = stop if stop is not None else self.stop
        if stops:
            payload["stop"] = list(stops)
        if kwargs.pop("logprobs", False):
            payload["logprobs"] = True
        tools = kwargs.pop("tools", None)
        if tools:
            payload["tools"] = tools
            payload["tool_choice"] = kwargs.pop("tool_choice", "auto")
        kwargs.pop("tool_choice", None)
        if kwargs:
            raise ConfigError(f"unsupported LocalChatModel call options: {sorted(kwargs)}")
        return payload

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        payload = self._payload(messages, stop, dict(kwargs))
        return self._to_result(_complete(self.load(), payload), payload)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        payload = self._payload(messages, stop, dict(kwargs))
        loop = asyncio.get_running_loop()
        server = self._server
        if server is None:
            server = await asyncio.to_thread(self.load)
        response = await loop.run_in_executor(server.executor, _complete, server, payload)
        return self._to_result(response, payload)

    def _to_result(self, response: dict[str, Any], payload: dict[str, Any]) -> ChatResult:
        choice = response["choices"][0]
        message = choice.get("message") or {}
        content = message.get("content") or ""
        tool_calls, invalid_tool_calls = _native_tool_calls(message.get("tool_calls") or [])
        if not tool_calls and not invalid_tool_calls and payload.get("tools"):
            names = [tool["function"]["name"] for tool in payload["tools"]]
            content, tool_calls = parse_text_tool_calls(content, names)
        usage = response.get("usage") or {}
        cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
        usage_metadata = UsageMetadata(
            input_tokens=int(usage.get("prompt_tokens", 0)),
            output_tokens=int(usage.get("completion_tokens", 0)),
            total_tokens=int(usage.get("total_tokens", 0)),
        )
        if cached is not None:
            usage_metadata["input_token_details"] = InputTokenDetails(cache_read=int(cached))
        response_metadata = {
            "model_name": self.model_name,
            "finish_reason": choice.get("finish_reason"),
            "timings": response.get("timings", {}),
        }
        if payload.get("logprobs"):
            response_metadata |= _token_metadata(response, choice, usage_metadata["input_tokens"])
        ai = AIMessage(
            content=content,
            tool_calls=tool_calls,
            invalid_tool_calls=invalid_tool_calls,
            usage_metadata=usage_metadata,
            response_metadata=response_metadata,
            id=response.get("id"),
        )
        return ChatResult(
            generations=[ChatGeneration(message=ai)], llm_output={"model_name": self.model_name}
        )


def _complete(server: LocalServer, payload: dict[str, Any]) -> dict[str, Any]:
    """One chat completion; with ``logprobs`` also the ids of the prompt it read."""
    response = server.chat(payload)
    if payload.get("logprobs"):
        response["prompt_token_ids"] = server.prompt_ids(payload)
    return response


def _token_metadata(response: dict[str, Any], choice: dict[str, Any], prompt_tokens: int) -> dict[str, Any]:
    """The reply's tokens in the harness's convention (:mod:`intercode_agents.models.tokens`). The
    prompt's ids are given only when their count is the one llama.cpp says it read."""
    entries = (choice.get("logprobs") or {}).get("content") or []
    content = [{"id": e.get("id"), "token": e.get("token"), "logprob": e.get("logprob")} for e in entries]
    found: dict[str, Any] = {
        "logprobs": {"content": content},
        "completion_token_ids": [entry["id"] for entry in content],
    }
    prompt_ids = response.get("prompt_token_ids") or []
    if len(prompt_ids) == prompt_tokens:
        found["prompt_token_ids"] = prompt_ids
    else:
        found["token_ids_problem"] = (
            f"the prompt tokenized to {len(prompt_ids)} ids, but the model read {prompt_tokens} tokens"
        )
    return found


def _native_tool_calls(calls: list[dict[str, Any]]) -> tuple[list[ToolCall], list[InvalidToolCall]]:
    """OpenAI ``tool_calls`` entries from the server; unparsable arguments become invalid calls."""
    valid: list[ToolCall] = []
    invalid: list[InvalidToolCall] = []
    for call in calls:
        function = call.get("function") or {}
        name, arguments = function.get("name", ""), function.get("arguments") or "{}"
        try:
            args = json.loads(arguments) if isinstance(arguments, str) else arguments
        except json.JSONDecodeError as exc:
            invalid.append(invalid_tool_call(name=name, args=arguments, id=call.get("id"), error=str(exc)))
            continue
        if not isinstance(args, dict):
            invalid.append(
                invalid_tool_call(name=name, args=str(arguments), id=call.get("id"), error="not an object")
            )
            continue
        valid.append(tool_call(name=name, args=args, id=call.get("id")))
    return valid, invalid

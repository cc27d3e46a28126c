"""A chat model that plays back a script: for tests, demos and checking a strategy without an API.

Each script item answers one call: a string (a text reply), an ``AIMessage`` (e.g. with
``tool_calls``), an exception instance (raised, to exercise retries), or a callable that receives the
prompt messages and returns a string or ``AIMessage``. ``bind_tools`` is supported (the tools are
recorded, the script decides the calls), so the model works with tool-calling strategies,
``create_agent`` and ``ToolNode``. Every prompt it received is kept in ``calls``.

Example::

    model = ScriptedChatModel(["```bash\\nls /testbed\\n```", "submit"])
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.base import LangSmithParams
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from pydantic import Field

ScriptItem = str | AIMessage | BaseException | Callable[[list[BaseMessage]], str | AIMessage]


class ScriptExhausted(RuntimeError):
    """The scripted model was called more often than its script has replies."""


class ScriptedChatModel(GenericFakeChatModel):
    """``GenericFakeChatModel`` with a list script, raised errors, callables and ``bind_tools``."""

    messages: Iterator[Any]
    model_name: str = "scripted"
    disable_streaming: bool = True
    calls: list[list[BaseMessage]] = Field(default_factory=list)
    bound_tools: list[str] = Field(default_factory=list)

    def __init__(self, script: Iterable[ScriptItem], **kwargs: Any) -> None:
        messages: Iterator[Any] = iter(list(script))  # as the field is typed here, not in the parent
        super().__init__(messages=messages, **kwargs)

    def bind_tools(
        self, tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool], **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        self.bound_tools = [getattr(tool, "name", None) or str(tool) for tool in tools]
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.calls.append(list(messages))
        try:
            item = next(self.messages)
        except StopIteration:
            raise ScriptExhausted(
                f"the scripted model has no reply left for call {len(self.calls)}"
            ) from None
        if isinstance(item, BaseException):
            raise item
        if callable(item):
            item = item(list(messages))
        message = AIMessage(content=item) if isinstance(item, str) else item
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._generate(messages, stop=stop, **kwargs)

    @property
    def _llm_type(self) -> str:
        return "scripted-chat-model"

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        params = super()._get_ls_params(stop=stop, **kwargs)
        params["ls_provider"] = "scripted"
        return params

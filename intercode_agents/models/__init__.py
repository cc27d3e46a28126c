"""Chat models: the local llama.cpp model, its weights, prices, and resolution of model specs.

Nothing here imports xllamacpp or a provider package until a model is actually used, and the names
below are imported on first use, so ``intercode_agents.models.pricing`` (the metrics need it) stays
light.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from intercode_agents.models.local import LocalChatModel
    from intercode_agents.models.resolve import (
        MODELS,
        describe_model,
        parse_model_options,
        register_model,
        resolve_model,
        takes_seed,
        with_seed,
    )
    from intercode_agents.models.text_tool_calls import parse_text_tool_calls
    from intercode_agents.models.weights import DEFAULT_WEIGHTS, WeightsSpec, resolve_weights

_LAZY = {
    "LocalChatModel": "local",
    "MODELS": "resolve",
    "describe_model": "resolve",
    "register_model": "resolve",
    "parse_model_options": "resolve",
    "resolve_model": "resolve",
    "takes_seed": "resolve",
    "with_seed": "resolve",
    "parse_text_tool_calls": "text_tool_calls",
    "DEFAULT_WEIGHTS": "weights",
    "WeightsSpec": "weights",
    "resolve_weights": "weights",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"intercode_agents.models.{_LAZY[name]}"), name)
    raise AttributeError(name)


__all__ = [
    "DEFAULT_WEIGHTS",
    "MODELS",
    "LocalChatModel",
    "WeightsSpec",
    "describe_model",
    "parse_model_options",
    "parse_text_tool_calls",
    "register_model",
    "resolve_model",
    "resolve_weights",
    "takes_seed",
    "with_seed",
]

"""Chat models: the local llama.cpp model, its weights, and resolution of model specs.

Nothing here imports xllamacpp or a provider package until a model is actually used.
"""

from intercode_agents.models.local import LocalChatModel
from intercode_agents.models.resolve import (
    describe_model,
    parse_model_options,
    resolve_model,
    takes_seed,
    with_seed,
)
from intercode_agents.models.text_tool_calls import parse_text_tool_calls
from intercode_agents.models.weights import DEFAULT_WEIGHTS, WeightsSpec, resolve_weights

__all__ = [
    "DEFAULT_WEIGHTS",
    "LocalChatModel",
    "WeightsSpec",
    "describe_model",
    "parse_model_options",
    "parse_text_tool_calls",
    "resolve_model",
    "resolve_weights",
    "takes_seed",
    "with_seed",
]

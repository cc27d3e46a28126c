"""Turn a model spec ("local", "local:/path.gguf", "openai:gpt-4o-mini", an instance) into a chat model.

This is the one place a model spec is resolved: the strategies, the runner and the CLI all call
:func:`resolve_model`. :func:`parse_model_options` reads the CLI's ``-M key=value`` settings and
:func:`with_seed` gives a model the seed of one episode where the model takes one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable, RunnableBinding

from intercode_agents.errors import ConfigError, ModelWeightsError
from intercode_agents.models.local import LocalChatModel
from intercode_agents.models.weights import check_gguf_file
from intercode_agents.plugins import Registry
from intercode_agents.user_code import describe, is_reference, load_object

ModelFactory = Callable[..., BaseChatModel]


def _factory(obj: object, what: str) -> ModelFactory:
    if not callable(obj):
        raise ConfigError(f"{what} is a {type(obj).__name__}, not a function that makes a chat model")
    return obj


#: Chat models by name: ``local`` (the embedded llama.cpp model), another package's (entry point group
#: ``intercode_agents.models``: a function ``make(argument, **settings)``) and a script's own
#: (:func:`register_model`). ``NAME:ARGUMENT`` passes ARGUMENT (``local:/path/to/model.gguf``).
MODELS: Registry[ModelFactory] = Registry("model", "intercode_agents.models", _factory)

RUNNER_ONLY = {
    "gold": "replays each task's gold solution",
    "human": "asks a person at the terminal for each action",
}

# The env var each hosted provider reads its key from, checked up front for a clear message.
API_KEY_ENV = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "azure_openai": "AZURE_OPENAI_API_KEY",
    "google_genai": "GOOGLE_API_KEY",
    "mistralai": "MISTRAL_API_KEY",
    "groq": "GROQ_API_KEY",
    "fireworks": "FIREWORKS_API_KEY",
    "together": "TOGETHER_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "xai": "XAI_API_KEY",
    "cohere": "COHERE_API_KEY",
    "perplexity": "PPLX_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
}
_KEY_SETTINGS = ("api_key", "openai_api_key", "anthropic_api_key", "google_api_key")


def resolve_model(spec: str | BaseChatModel, **settings: Any) -> BaseChatModel:
    """Return a chat model for ``spec``; ``settings`` (temperature, max_tokens, ...) apply to strings.

    - ``"NAME"`` or ``"NAME:ARGUMENT"`` for a registered model (:data:`MODELS`): ``"local"`` or
      ``"local:/path/to/model.gguf"`` is :class:`LocalChatModel` (llama.cpp in-process);
    - ``"provider:model"`` (or a model name LangChain can infer a provider from): ``init_chat_model``;
    - ``"PATH.py:NAME"`` or ``"package.module:NAME"``: a user's ``BaseChatModel`` instance, or a
      function that returns one (called with ``settings``);
    - a ``BaseChatModel`` instance is returned as it is (configure it yourself; settings are refused).
    """
    settings = {key: value for key, value in settings.items() if value is not None}
    if isinstance(spec, BaseChatModel):
        if settings:
            raise ConfigError(
                f"settings {sorted(settings)} apply to model strings only; "
                f"configure the {type(spec).__name__} instance itself"
            )
        return spec
    if not isinstance(spec, str):
        raise ConfigError(
            f"a model is a string such as 'local' or 'openai:gpt-4o-mini', or a BaseChatModel; got {spec!r}"
        )
    spec = spec.strip()
    if not spec:
        raise ConfigError(
            "the model spec is empty; use 'local' or 'provider:model', e.g. 'openai:gpt-4o-mini'"
        )
    if spec in RUNNER_ONLY:
        raise ConfigError(
            f"{spec!r} is not a chat model: the runner handles it ({RUNNER_ONLY[spec]}); "
            "pass it to the runner or the CLI's --model, not to resolve_model"
        )
    head, _, argument = spec.partition(":")
    if head in MODELS:
        return _registered(spec, head, argument, settings)
    if is_reference(spec):
        return _user_model(spec, settings)
    return _langchain(spec, settings)


def _user_model(ref: str, settings: dict[str, Any]) -> BaseChatModel:
    loaded = load_object(ref, "model")
    obj = loaded.obj
    if isinstance(obj, BaseChatModel):
        return resolve_model(obj, **settings)
    if not callable(obj):
        raise ConfigError(f"model {ref!r} is a {type(obj).__name__}, not a BaseChatModel or a function")
    try:
        model = obj(**settings)
    except Exception as exc:
        raise ConfigError(f"model {ref!r} ({loaded.source}) raised {describe(exc, loaded.file)}") from exc
    if not isinstance(model, BaseChatModel):
        raise ConfigError(f"model {ref!r} returned a {type(model).__name__}, not a BaseChatModel")
    return model


def parse_model_options(items: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """``key=value`` settings for the provider (the CLI's ``-M``); a value is read as JSON where it
    is one (``0.9``, ``true``, ``["a"]``, ``null``), else kept as text."""
    options: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key or not key.isidentifier():
            raise ConfigError(f"bad model setting {item!r}: write key=value, e.g. -M top_p=0.9")
        if key in options:
            raise ConfigError(f"the model setting {key!r} is given twice")
        try:
            options[key] = json.loads(raw)
        except json.JSONDecodeError:
            options[key] = raw
    return options


def takes_seed(model: BaseChatModel) -> bool:
    """Whether the model has a ``seed`` setting (the local model and several providers do)."""
    return "seed" in type(model).model_fields


def with_seed(model: BaseChatModel, seed: int | None) -> BaseChatModel:
    """``model`` sampling with ``seed`` (a copy; loaded weights and clients are shared), or ``model``
    itself when there is no seed or it takes none."""
    if seed is None or not takes_seed(model) or getattr(model, "seed", None) == seed:
        return model
    return model.model_copy(update={"seed": seed})


def _registered(spec: str, head: str, argument: str, settings: dict[str, Any]) -> BaseChatModel:
    try:
        model = MODELS.get(head)(argument, **settings)
    except ConfigError:
        raise
    except Exception as exc:
        raise ConfigError(f"model {spec!r} could not be created: {type(exc).__name__}: {exc}") from exc
    if not isinstance(model, BaseChatModel):
        raise ConfigError(f"model {spec!r} gave a {type(model).__name__}, not a BaseChatModel")
    return model


def register_model(name: str, *, replace: bool = False) -> Callable[[ModelFactory], ModelFactory]:
    """A decorator: ``@register_model("mine")`` on ``def make(argument: str, **settings) ->
    BaseChatModel`` makes ``--model mine`` (and ``mine:ARGUMENT``) that model everywhere."""
    return MODELS.register(name, replace=replace)


def _local(path: str, **settings: Any) -> LocalChatModel:
    if path:
        try:
            check_gguf_file(Path(path).expanduser())
        except ModelWeightsError as exc:
            raise ConfigError(f"model 'local:{path}': {exc}") from exc
        settings = {**settings, "model_path": path}
    try:
        return LocalChatModel(**settings)
    except ValueError as exc:  # pydantic's ValidationError
        raise ConfigError(f"bad settings for the local model: {exc}") from exc


def _langchain(spec: str, settings: dict[str, Any]) -> BaseChatModel:
    try:
        from langchain.chat_models import init_chat_model
    except ImportError as exc:
        raise ConfigError(
            f"model {spec!r} needs LangChain's model factory: pip install 'intercode-agents[agents]'"
        ) from exc
    provider, _, name = spec.partition(":") if ":" in spec else ("", "", spec)
    try:
        model = init_chat_model(name, model_provider=provider or None, **settings)
    except ImportError as exc:  # the provider's integration package is missing
        raise ConfigError(f"model {spec!r}: {exc}") from exc
    except ValueError as exc:
        text = str(exc)
        if "Unsupported" in text or "infer model provider" in text:
            what = f"unknown model provider {provider!r} in" if provider else "cannot tell the provider of"
            raise ConfigError(
                f"{what} {spec!r}: write 'provider:model' with a LangChain provider "
                "(openai, anthropic, ollama, google_genai, mistralai, groq, ...) or 'local'.\n"
                + text.split("\n\n")[-1]
            ) from exc
        raise ConfigError(f"model {spec!r} could not be created: {text}{_key_hint(provider)}") from exc
    except Exception as exc:  # provider SDKs raise their own types, e.g. for a missing API key
        raise ConfigError(f"model {spec!r} could not be created: {exc}{_key_hint(provider)}") from exc
    _check_api_key(provider or model._get_ls_params().get("ls_provider", ""), settings)
    return model


def _key_hint(provider: str) -> str:
    env = API_KEY_ENV.get(provider.replace("-", "_").lower())
    return f"; set the {env} environment variable" if env and not os.environ.get(env) else ""


def _check_api_key(provider: str, settings: dict[str, Any]) -> None:
    env = API_KEY_ENV.get(provider.replace("-", "_").lower())
    if env and not os.environ.get(env) and not any(key in settings for key in _KEY_SETTINGS):
        raise ConfigError(f"model provider {provider!r} needs an API key: set the {env} environment variable")


def describe_model(model: Runnable[Any, Any]) -> dict[str, Any]:
    """The model's name and settings, for trajectory records: ``{"name": ..., "settings": {...}}``.
    A binding (``bind_tools``, ``bind``) is described by the model it wraps."""
    while isinstance(model, RunnableBinding):
        model = model.bound
    if isinstance(model, LocalChatModel):
        settings = {key: value for key, value in model.settings().items() if value is not None}
        return {"name": f"local:{model.model_name}", "settings": settings}
    if not isinstance(model, BaseChatModel):
        return {"name": type(model).__name__, "settings": {}}
    params = model._get_ls_params()
    provider, name = params.get("ls_provider"), params.get("ls_model_name")
    if not name:  # e.g. LangChain's fake chat models
        provider, name = None, type(model).__name__
    if provider == name:
        provider = None
    settings = {
        "temperature": params.get("ls_temperature"),
        "max_tokens": params.get("ls_max_tokens"),
        "seed": getattr(model, "seed", None),
    }
    return {
        "name": f"{provider}:{name}" if provider else str(name),
        "settings": {key: value for key, value in settings.items() if value is not None},
    }


MODELS.add("local", _local)

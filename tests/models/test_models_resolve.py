"""resolve_model and describe_model: specs to chat models, with clear errors."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from intercode_agents.errors import ConfigError
from intercode_agents.models import LocalChatModel, describe_model, resolve_model


def fake_model() -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=iter([AIMessage("ls")]))


def test_an_instance_passes_through() -> None:
    model = fake_model()
    assert resolve_model(model) is model


def test_settings_with_an_instance_are_refused() -> None:
    with pytest.raises(ConfigError, match="configure the GenericFakeChatModel instance"):
        resolve_model(fake_model(), temperature=0.0)


@pytest.mark.parametrize("spec", ["nosuchprovider:some-model", "made-up-model"])
def test_unknown_provider_is_a_config_error(spec: str) -> None:
    with pytest.raises(ConfigError, match="provider") as info:
        resolve_model(spec)
    assert "openai" in str(info.value)  # the message lists the providers to choose from


@pytest.mark.parametrize("spec", ["gold", "human"])
def test_runner_only_names_are_rejected_here(spec: str) -> None:
    with pytest.raises(ConfigError, match="the runner handles it"):
        resolve_model(spec)


def test_empty_and_non_string_specs() -> None:
    with pytest.raises(ConfigError, match="empty"):
        resolve_model("  ")
    with pytest.raises(ConfigError, match="BaseChatModel"):
        resolve_model(42)  # type: ignore[arg-type]


@pytest.mark.skipif(
    importlib.util.find_spec("langchain_openai") is not None, reason="langchain-openai installed"
)
def test_missing_provider_package_names_the_pip_package() -> None:
    with pytest.raises(ConfigError, match="pip install langchain-openai"):
        resolve_model("openai:gpt-4o-mini")


@pytest.mark.skipif(importlib.util.find_spec("langchain_openai") is None, reason="needs langchain-openai")
def test_missing_api_key_names_the_env_var(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        resolve_model("openai:gpt-4o-mini")


def test_local_builds_the_local_model_with_settings() -> None:
    model = resolve_model("local", temperature=0.2, max_tokens=64, seed=None)
    assert isinstance(model, LocalChatModel)
    assert (model.temperature, model.max_tokens, model.seed) == (0.2, 64, 0)  # None means "default"
    assert model.model_path is None  # weights are resolved on first use, not here


def test_local_with_a_path(tmp_path: Path) -> None:
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF" + b"\0" * 8)
    model = resolve_model(f"local:{gguf}")
    assert isinstance(model, LocalChatModel) and model.model_path == str(gguf)
    assert model.model_name == "tiny"
    with pytest.raises(ConfigError, match="do not exist"):
        resolve_model(f"local:{tmp_path / 'absent.gguf'}")
    with pytest.raises(ConfigError, match="not a GGUF file"):
        resolve_model(f"local:{Path(__file__)}")


def test_local_with_bad_settings() -> None:
    with pytest.raises(ConfigError, match="temperature"):
        resolve_model("local", temperature=-1)
    with pytest.raises(ConfigError, match="no_such_setting"):
        resolve_model("local", no_such_setting=1)


def test_describe_model_for_records() -> None:
    local = resolve_model("local", temperature=0.0, max_tokens=128)
    described = describe_model(local)
    assert described["name"] == "local:qwen2.5-coder-1.5b-instruct-q4_k_m"
    assert described["settings"]["max_tokens"] == 128 and described["settings"]["temperature"] == 0.0
    assert describe_model(local.bind_tools([])) == described  # bound models describe their model
    assert describe_model(fake_model()) == {"name": "GenericFakeChatModel", "settings": {}}

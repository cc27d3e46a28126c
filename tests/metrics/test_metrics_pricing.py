"""The price table: lookups by model name, free models, and clear errors for bad tables or counts."""

from __future__ import annotations

from pathlib import Path

import pytest

from intercode_agents.errors import ConfigError
from intercode_agents.models.pricing import DEFAULT_PRICES, PRICES_ENV_VAR, cost_usd, load_prices

TABLE = """
as_of: "2000-01"
models:
  gpt-4o: {input: 2.0, output: 8.0}
  gpt-4o-mini: {input: 0.5, output: 1.0}
free_providers: [local, ollama]
free_models: [gold]
"""


@pytest.fixture
def table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "prices.yaml"
    path.write_text(TABLE)
    monkeypatch.setenv(PRICES_ENV_VAR, str(path))
    return path


def test_shipped_table_is_dated_and_prices_known_models() -> None:
    prices = load_prices(DEFAULT_PRICES)
    assert prices.as_of[:2] == "20"
    assert "check" in DEFAULT_PRICES.read_text().lower()
    for name in ("gpt-4o-mini", "gpt-4o", "claude-3-5-haiku"):
        price = prices.lookup(name)
        assert price is not None and 0 < price.input_per_million < price.output_per_million


def test_cost_by_provider_and_version(table: Path) -> None:
    # 1M in * 0.5 + 2M out * 1.0 = 2.5 USD
    assert cost_usd("openai:gpt-4o-mini", 1_000_000, 2_000_000) == pytest.approx(2.5)
    assert cost_usd("openai/gpt-4o-mini-2024-07-18", 1_000_000, 2_000_000) == pytest.approx(2.5)
    # gpt-4o is its own row, not a prefix of gpt-4o-mini: 1000 * 2 / 1e6 + 500 * 8 / 1e6 = 0.006
    assert cost_usd("GPT-4o", 1000, 500) == pytest.approx(0.006)
    assert cost_usd("acme:huge-model", 1000, 1000) is None


@pytest.mark.parametrize(
    "model", ["local", "local:/models/q.gguf", "ollama:qwen2.5-coder", "gold", "GenericFakeChatModel"]
)
def test_local_and_fake_models_are_free(table: Path, model: str) -> None:
    assert cost_usd(model, 10_000, 10_000) == 0.0


def test_bad_token_counts(table: Path) -> None:
    with pytest.raises(ConfigError, match="input_tokens must be a non-negative integer"):
        cost_usd("gpt-4o", -1, 0)
    with pytest.raises(ConfigError, match="output_tokens"):
        cost_usd("gpt-4o", 0, 1.5)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("models: [gpt-4o]", "needs a 'models:' mapping"),
        ("models:\n  gpt-4o: {input: 1.0}", "needs exactly the keys 'input' and 'output'"),
        ("models:\n  gpt-4o: {input: -1, output: 2}", "gpt-4o.input must be a non-negative number"),
        ("models:\n  gpt-4o: {input: 1, output: two}", "gpt-4o.output must be a non-negative number"),
        ("models: {}\nfree_models: local", "'free_models' must be a list"),
        ("models: {a: [1,", "is not valid YAML"),
    ],
)
def test_bad_tables_name_the_problem(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_prices(path)


def test_missing_table(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_prices(tmp_path / "nope.yaml")

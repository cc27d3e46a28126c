"""Token prices (USD per 1M tokens) from an editable YAML table, for cost estimates.

The shipped table (``prices.yaml`` next to this file) is an example with a date on it; users should
check it. ``INTERCODE_AGENTS_PRICES`` points at a replacement table with the same layout.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

from intercode_agents.errors import ConfigError

DEFAULT_PRICES = Path(__file__).with_name("prices.yaml")
PRICES_ENV_VAR = "INTERCODE_AGENTS_PRICES"

# Version suffixes that share the base model's price: -2024-07-18, -20241022, -0613, -latest.
_VERSION_SUFFIX = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{8}|\d{4}|latest)$")


@dataclass(frozen=True)
class Price:
    input_per_million: float
    output_per_million: float


@dataclass(frozen=True)
class PriceTable:
    as_of: str
    models: dict[str, Price]
    free_providers: frozenset[str]
    free_models: frozenset[str]

    def lookup(self, model: str) -> Price | None:
        """The price of ``model`` ("provider:name", "provider/name" or "name"), or None if unknown."""
        provider, name = _split_model(model)
        free_names = self.free_models | self.free_providers  # "local" alone is the local model
        if provider in self.free_providers or name in free_names or "fake" in model.lower():
            return Price(0.0, 0.0)
        while True:
            if name in self.models:
                return self.models[name]
            shorter = _VERSION_SUFFIX.sub("", name)
            if shorter == name:
                return None
            name = shorter


def _split_model(model: str) -> tuple[str, str]:
    text = model.strip().lower()
    for sep in (":", "/"):
        if sep in text:
            provider, _, name = text.partition(sep)
            return provider, name
    return "", text


def _number(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ConfigError(f"{where} must be a non-negative number of USD per 1M tokens, got {value!r}")
    return float(value)


def parse_price_table(data: object, source: str) -> PriceTable:
    """Validate the YAML document ``data`` (read from ``source``) into a :class:`PriceTable`."""
    if not isinstance(data, dict) or not isinstance(data.get("models"), dict):
        raise ConfigError(f"price table {source} needs a 'models:' mapping of name -> {{input, output}}")
    models: dict[str, Price] = {}
    for name, row in data["models"].items():
        if not isinstance(row, dict) or set(row) != {"input", "output"}:
            raise ConfigError(
                f"price table {source}: model {name!r} needs exactly the keys 'input' and 'output' "
                f"(USD per 1M tokens), got {row!r}"
            )
        where = f"price table {source}: {name}"
        models[str(name).lower()] = Price(
            _number(row["input"], f"{where}.input"), _number(row["output"], f"{where}.output")
        )
    free: dict[str, frozenset[str]] = {}
    for key in ("free_providers", "free_models"):
        names = data.get(key) or []
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ConfigError(f"price table {source}: {key!r} must be a list of names, got {names!r}")
        free[key] = frozenset(n.lower() for n in names)
    return PriceTable(str(data.get("as_of", "undated")), models, free["free_providers"], free["free_models"])


@lru_cache(maxsize=8)
def _load_cached(path: Path, mtime_ns: int) -> PriceTable:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"price table {path} is not valid YAML: {exc}") from exc
    return parse_price_table(data, str(path))


def load_prices(path: Path | None = None) -> PriceTable:
    """Load ``path``, else the file named by $INTERCODE_AGENTS_PRICES, else the shipped example."""
    if path is None:
        override = os.environ.get(PRICES_ENV_VAR)
        path = Path(override) if override else DEFAULT_PRICES
    if not path.is_file():
        raise ConfigError(f"price table {path} does not exist (set by argument or ${PRICES_ENV_VAR})")
    return _load_cached(path.resolve(), path.stat().st_mtime_ns)


def cost_usd(
    model: str, input_tokens: int, output_tokens: int, *, prices: PriceTable | None = None
) -> float | None:
    """USD cost of the tokens, 0.0 for local/fake models, None when the table does not know the model."""
    for label, count in (("input_tokens", input_tokens), ("output_tokens", output_tokens)):
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ConfigError(f"{label} must be a non-negative integer, got {count!r}")
    price = (prices or load_prices()).lookup(model)
    if price is None:
        return None
    return (input_tokens * price.input_per_million + output_tokens * price.output_per_million) / 1_000_000

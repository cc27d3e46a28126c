"""Strategies by name: ``get_strategy("react", max_turns=8)``; users add theirs with ``register_strategy``."""

from __future__ import annotations

from typing import Any

from intercode_agents.errors import ConfigError
from intercode_agents.strategies.base import Strategy
from intercode_agents.strategies.guarded import Guarded
from intercode_agents.strategies.plan_solve import PlanSolve
from intercode_agents.strategies.react import ReAct
from intercode_agents.strategies.single_shot import SingleShot
from intercode_agents.strategies.tool_calling import ToolCalling
from intercode_agents.strategies.try_again import TryAgain

_REGISTRY: dict[str, type[Strategy]] = {
    cls.name: cls for cls in (TryAgain, ReAct, PlanSolve, ToolCalling, SingleShot, Guarded)
}


def available_strategies() -> list[str]:
    return sorted(_REGISTRY)


def register_strategy(cls: type[Strategy], *, replace: bool = False) -> type[Strategy]:
    """Make ``cls`` available to :func:`get_strategy` (and so to the CLI) under ``cls.name``."""
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{cls.__name__} needs a class attribute `name`")
    if name in _REGISTRY and _REGISTRY[name] is not cls and not replace:
        raise ConfigError(f"a strategy named {name!r} exists already; pass replace=True to override it")
    _REGISTRY[name] = cls
    return cls


def get_strategy(name: str, **config: Any) -> Strategy:
    """A configured strategy; an unknown name or setting is a ConfigError listing the choices."""
    cls = _REGISTRY.get(name)
    if cls is None:
        raise ConfigError(f"unknown strategy {name!r}; choose one of {', '.join(available_strategies())}")
    return cls(**config)

"""Strategies by name: ``get_strategy("react", max_turns=8)``; users add theirs with ``register_strategy``
or name them by reference: ``get_strategy("my_strategies.py:SecondChance")`` or
``get_strategy("my_package.strategies:SecondChance")`` loads a :class:`Strategy` subclass from a
user's file or module (see :mod:`intercode_agents.user_code`)."""

from __future__ import annotations

import inspect
from typing import Any

from intercode_agents.errors import ConfigError
from intercode_agents.strategies.base import Strategy
from intercode_agents.strategies.guarded import Guarded
from intercode_agents.strategies.plan_solve import PlanSolve
from intercode_agents.strategies.react import ReAct
from intercode_agents.strategies.single_shot import SingleShot
from intercode_agents.strategies.tool_calling import ToolCalling
from intercode_agents.strategies.try_again import TryAgain
from intercode_agents.user_code import load_object

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


def load_strategy_class(ref: str) -> type[Strategy]:
    """The Strategy subclass ``ref`` (``PATH.py:Class`` or ``package.module:Class``) names."""
    loaded = load_object(ref, "strategy")
    cls = loaded.obj
    if not (isinstance(cls, type) and issubclass(cls, Strategy)):
        what = f"the class {cls.__name__}" if isinstance(cls, type) else f"a {type(cls).__name__}"
        raise ConfigError(
            f"strategy {ref!r} is {what}, not a subclass of intercode_agents.strategies.Strategy"
        )
    if inspect.isabstract(cls):
        missing = ", ".join(sorted(getattr(cls, "__abstractmethods__", ())))
        raise ConfigError(f"strategy {ref!r}: {cls.__name__} does not implement {missing}")
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise ConfigError(f"strategy {ref!r}: {cls.__name__} needs a class attribute `name`")
    shipped = _REGISTRY.get(name)
    if shipped is not None and shipped is not cls and shipped.__module__.startswith("intercode_agents."):
        raise ConfigError(
            f"strategy {ref!r}: {cls.__name__} is named {name!r} like a shipped strategy, so its records "
            "could not be told apart; give it a name of its own"
        )
    return cls


def get_strategy(name: str, **config: Any) -> Strategy:
    """A configured strategy by name or by reference (``PATH.py:Class``, ``package.module:Class``);
    an unknown name or setting is a ConfigError listing the choices."""
    cls = load_strategy_class(name) if ":" in name else _REGISTRY.get(name)
    if cls is None:
        raise ConfigError(
            f"unknown strategy {name!r}; choose one of {', '.join(available_strategies())}, "
            "or name your own Strategy subclass as PATH.py:Class or package.module:Class"
        )
    try:
        return cls(**config)
    except TypeError as exc:
        raise ConfigError(f"strategy {name!r} cannot be created: {exc}") from exc

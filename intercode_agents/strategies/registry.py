"""Strategies by name: ``get_strategy("react", max_turns=8)``.

The names live in one :class:`~intercode_agents.plugins.Registry` (``STRATEGIES``): the shipped
strategies, another package's (entry point group ``intercode_agents.strategies``) and a script's own
(``@register_strategy`` on a :class:`Strategy` subclass). A strategy may also be named by reference for
one run: ``get_strategy("my_strategies.py:SecondChance")`` or ``"my_package.strategies:SecondChance"``
loads a subclass from a user's file or module (see :mod:`intercode_agents.user_code`).
"""

from __future__ import annotations

import inspect
from typing import Any

from intercode_agents.errors import ConfigError
from intercode_agents.plugins import Registry
from intercode_agents.strategies.base import Strategy
from intercode_agents.strategies.guarded import Guarded
from intercode_agents.strategies.plan_solve import PlanSolve
from intercode_agents.strategies.react import ReAct
from intercode_agents.strategies.single_shot import SingleShot
from intercode_agents.strategies.tool_calling import ToolCalling
from intercode_agents.strategies.try_again import TryAgain
from intercode_agents.user_code import load_object


def _strategy_class(obj: object, what: str) -> type[Strategy]:
    """``obj`` if it is a concrete, named Strategy subclass (else a ConfigError naming ``what``)."""
    if not (isinstance(obj, type) and issubclass(obj, Strategy)):
        kind = f"the class {obj.__name__}" if isinstance(obj, type) else f"a {type(obj).__name__}"
        raise ConfigError(f"{what} is {kind}, not a subclass of intercode_agents.strategies.Strategy")
    if inspect.isabstract(obj):
        missing = ", ".join(sorted(getattr(obj, "__abstractmethods__", ())))
        raise ConfigError(f"{what}: {obj.__name__} does not implement {missing}")
    name = getattr(obj, "name", None)
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{what}: {obj.__name__} needs a class attribute `name`")
    return obj


STRATEGIES: Registry[type[Strategy]] = Registry("strategy", "intercode_agents.strategies", _strategy_class)
SHIPPED = (TryAgain, ReAct, PlanSolve, ToolCalling, SingleShot, Guarded)
for _cls in SHIPPED:
    STRATEGIES.add(_cls.name, _cls)


def available_strategies() -> list[str]:
    return STRATEGIES.names()


def register_strategy(cls: type[Strategy], *, replace: bool = False) -> type[Strategy]:
    """Make ``cls`` available to :func:`get_strategy` (and so to the CLI) under ``cls.name``; usable as
    a class decorator."""
    return STRATEGIES.add(getattr(cls, "name", ""), cls, replace=replace, origin=f"strategy {cls!r}")


def load_strategy_class(ref: str) -> type[Strategy]:
    """The Strategy subclass ``ref`` (``PATH.py:Class`` or ``package.module:Class``) names."""
    cls = _strategy_class(load_object(ref, "strategy").obj, f"strategy {ref!r}")
    if cls.name in {shipped.name for shipped in SHIPPED} and cls not in SHIPPED:
        raise ConfigError(
            f"strategy {ref!r}: {cls.__name__} is named {cls.name!r} like a shipped strategy, so its "
            "records could not be told apart; give it a name of its own"
        )
    return cls


def get_strategy(name: str, **config: Any) -> Strategy:
    """A configured strategy by name or by reference (``PATH.py:Class``, ``package.module:Class``);
    an unknown name or setting is a ConfigError listing the choices."""
    if ":" in name:
        cls = load_strategy_class(name)
    elif name in STRATEGIES:
        cls = STRATEGIES.get(name)
    else:
        raise ConfigError(
            f"unknown strategy {name!r}; choose one of {', '.join(available_strategies())}, "
            "or name your own Strategy subclass as PATH.py:Class or package.module:Class"
        )
    try:
        return cls(**config)
    except TypeError as exc:
        raise ConfigError(f"strategy {name!r} cannot be created: {exc}") from exc

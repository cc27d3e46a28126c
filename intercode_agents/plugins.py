"""Named extensions: one registry style for envs, strategies, backends and models.

Every kind of extension is found the same way. A :class:`Registry` holds the names of one kind:

- the project's own, added where they are defined (a decorator, or a lazy ``"module:attr"`` reference
  for those whose module is heavy to import);
- another package's, declared in its ``pyproject.toml`` under the kind's entry point group and loaded
  the first time a name is looked up::

      [project.entry-points."intercode_agents.strategies"]
      second_chance = "my_package.strategies:SecondChance"

- a script's own, with the same decorator: ``@register_strategy`` (or ``register_strategy(cls)``).

The groups are ``intercode_agents.envs`` (the path of an env YAML file, as a string or ``Path``
attribute), ``intercode_agents.strategies`` (a ``Strategy`` subclass), ``intercode_agents.backends``
(a ``Backend`` subclass with a ``config_class``) and ``intercode_agents.models`` (a function that
takes the model settings and returns a chat model). Each kind checks what it is given when it is
registered (``check``), so a wrong object is a clear error that names its origin, and a name taken
twice is refused unless ``replace=True``.

Naming user code by reference (``PATH.py:NAME``, ``package.module:NAME``; see
:mod:`intercode_agents.user_code`) is not registration: it loads one object for one run.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from importlib.metadata import entry_points
from typing import Generic, TypeVar

from intercode_agents.errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    """The names of one kind of extension (see the module docstring)."""

    def __init__(self, kind: str, group: str, check: Callable[[object, str], T]) -> None:
        self.kind = kind
        self.group = group
        self._check = check
        self._items: dict[str, T] = {}
        self._lazy: dict[str, str] = {}  # name -> "module:attr", imported on first use
        self._entry_points_loaded = False

    def add(self, name: str, obj: object, *, replace: bool = False, origin: str = "") -> T:
        """Register ``obj`` under ``name``; return it as checked."""
        if not isinstance(name, str) or not name:
            raise ConfigError(f"a {self.kind} needs a non-empty name, got {name!r}")
        item = self._check(obj, origin or f"{self.kind} {name!r}")
        known = self._items.get(name)
        if ((known is not None and known is not item) or name in self._lazy) and not replace:
            raise ConfigError(
                f"a {self.kind} named {name!r} exists already; pass replace=True to override it"
            )
        self._lazy.pop(name, None)
        self._items[name] = item
        return item

    def add_lazy(self, name: str, ref: str) -> None:
        """Register the object at ``"module:attr"`` under ``name``, imported when first looked up."""
        self._lazy[name] = ref

    def register(self, name: str | None = None, *, replace: bool = False) -> Callable[[T], T]:
        """A decorator: ``@registry.register("name")`` (or the object's ``name`` attribute)."""

        def decorate(obj: T) -> T:
            self.add(name or str(getattr(obj, "name", "") or ""), obj, replace=replace)
            return obj

        return decorate

    def get(self, name: str) -> T:
        """The extension named ``name``; a ConfigError listing the known names when there is none."""
        self._load_entry_points()
        if name in self._items:
            return self._items[name]
        if name in self._lazy:
            ref = self._lazy.pop(name)
            where = f"{self.kind} {name!r} ({ref})"
            return self.add(name, _import(ref, where), origin=where)
        raise ConfigError(f"unknown {self.kind} {name!r}; choose one of {', '.join(self.names())}")

    def find(self, name: str) -> T | None:
        """The extension named ``name``, or None."""
        return self.get(name) if name in self else None

    def names(self) -> list[str]:
        self._load_entry_points()
        return sorted({*self._items, *self._lazy})

    def __contains__(self, name: object) -> bool:
        self._load_entry_points()
        return name in self._items or name in self._lazy

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def _load_entry_points(self) -> None:
        """Add the entry points of the kind's group (once; a name already taken stays as it is)."""
        if self._entry_points_loaded:
            return
        self._entry_points_loaded = True
        for ep in entry_points(group=self.group):
            if ep.name in self._items or ep.name in self._lazy:
                continue
            where = f"{self.kind} entry point {ep.name!r} ({ep.value})"
            try:
                obj = ep.load()
            except Exception as exc:  # a broken plugin names itself
                raise ConfigError(f"{where} cannot be loaded: {type(exc).__name__}: {exc}") from exc
            self.add(ep.name, obj, origin=where)


def _import(ref: str, what: str) -> object:
    module, _, attr = ref.partition(":")
    try:
        obj: object = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"{what}: cannot import {ref}: {exc}") from exc
    return obj

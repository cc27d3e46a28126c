"""Env definitions as data: ``envs/<name>.yaml`` names a class and its default options.

A user adds an environment by writing a YAML file (``make_env("path/to/my_env.yaml")``) whose
``class`` is one of ours or their own :class:`~intercode_agents.envs.base.Env` subclass, plus a
Dockerfile for its image.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import yaml

from intercode_agents.envs.base import Env
from intercode_agents.errors import ConfigError
from intercode_agents.paths import data_dir


def env_names() -> list[str]:
    return sorted(p.stem for p in data_dir("envs").glob("*.yaml"))


def load_spec(name_or_path: str | Path) -> dict[str, Any]:
    path = Path(name_or_path)
    if path.suffix not in (".yaml", ".yml"):
        path = data_dir("envs") / f"{name_or_path}.yaml"
        if not path.is_file():
            raise ConfigError(f"unknown env {str(name_or_path)!r}; choose one of {', '.join(env_names())}")
    try:
        spec = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read env definition {path}: {exc}") from exc
    if not isinstance(spec, dict) or not isinstance(spec.get("class"), str):
        raise ConfigError(f"env definition {path} needs a mapping with a 'class: module:Class' entry")
    return spec


def _import_class(ref: str) -> type[Env]:
    module_name, _, attr = ref.partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"env class {ref!r} cannot be imported: {exc}") from exc
    if not (isinstance(cls, type) and issubclass(cls, Env)):
        raise ConfigError(f"env class {ref!r} is not a subclass of intercode_agents.envs.Env")
    return cls


def env_class(name: str | Path) -> type[Env]:
    """The class an env definition names (an unknown env or class is a ConfigError)."""
    return _import_class(load_spec(name)["class"])


def make_env(name: str | Path, **overrides: Any) -> Env:
    """Create an env by name ("bash", "sql", "python", "ctf") or from a YAML definition file.

    ``overrides`` replace the definition's options (``reward="strict"``, ``max_turns=10``,
    ``action_timeout=5``, ``sandbox_options={...}``, ``data_root=...``; Bash and CTF also take
    ``execution="paper"``: each action run as the original InterCode ran it). Use it as
    ``async with make_env("bash") as env:`` so its containers are removed at the end.
    """
    spec = load_spec(name)
    options = {**(spec.get("options") or {}), **overrides}
    cls = _import_class(spec["class"])
    try:
        return cls(**options)
    except TypeError as exc:
        raise ConfigError(f"bad option for env {spec.get('name', name)!r}: {exc}") from exc

"""Env classes from env definitions: :func:`make_env` and :func:`env_class`.

The definitions themselves (YAML files, their names and the user envs loaded in this process) are
:mod:`intercode_agents.spec`; this module adds what needs the :class:`Env` class: checking that a
definition names one, and making an env with the definition's options.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from intercode_agents.envs.base import Env
from intercode_agents.errors import ConfigError
from intercode_agents.spec import EnvSpec, load_spec


def class_of(spec: EnvSpec) -> type[Env]:
    """The :class:`Env` subclass ``spec`` names (a ConfigError when it names something else)."""
    cls = spec.load_class()
    if not (isinstance(cls, type) and issubclass(cls, Env)):
        raise ConfigError(
            f"env class {spec.class_ref!r} of {spec.path} is not a subclass of intercode_agents.envs.Env"
        )
    return cls


def env_class(name: str | Path) -> type[Env]:
    """The class an env definition names (an unknown env or class is a ConfigError)."""
    return class_of(load_spec(name))


def make_env(name: str | Path, **overrides: Any) -> Env:
    """Create an env by name ("bash", "sql", "python", "ctf", or a user env loaded before) or from
    the path of an env YAML file.

    ``overrides`` replace the definition's options (``reward="strict"``, ``max_turns=10``,
    ``action_timeout=5``, ``sandbox_options={...}``, ``data_root=...``; Bash and CTF also take
    ``execution="paper"``: each action run as the original InterCode ran it). Use it as
    ``async with make_env("bash") as env:`` so its containers are removed at the end.
    """
    spec = load_spec(name)
    options = {**spec.options, **overrides}
    cls = class_of(spec)
    try:
        env = cls(**options)
    except TypeError as exc:
        raise ConfigError(f"bad option for env {spec.name!r}: {exc}") from exc
    env.name = spec.name
    if spec.prompts:
        env.prompt_texts = {**env.prompt_texts, **spec.prompts}
    return env

"""Choosing a backend: typed configs with a ``type`` field, engine strings, and third-party backends.

A backend is named by

- a config mapping or object, ``{"type": "docker", "host": "unix:///run/d2.sock", "slots": 8}``
  (:class:`DockerConfig`, :class:`PodmanConfig`, or a third party's), as in an env's YAML
  (``backend:``) or ``make_env("bash", backend={...})``;
- an engine string ``[TYPE:]ADDRESS[?slots=N]``: ``unix:///run/d2.sock``, ``tcp://127.0.0.1:2376``,
  ``podman:unix:///run/podman/podman.sock``, ``docker`` (the local engine), as ``--backend`` and
  ``--engines`` take them;
- a :class:`~intercode_agents.sandbox.contract.Backend` instance.

Equal configs give the same backend object in a process, so that its clients (and placement's view
of it: :mod:`intercode_agents.sandbox.placement`) are shared by every sandbox on that engine. With
nothing said, the backend is ``$INTERCODE_BACKEND`` (an engine string or JSON) or the local Docker
engine (``$DOCKER_HOST`` applies).

The types live in one :class:`~intercode_agents.plugins.Registry` (``BACKENDS``), as strategies do.
Each entry is a :class:`~intercode_agents.sandbox.contract.Backend` subclass with a ``config_class`` (a
:class:`BackendConfig` subclass whose ``type`` is a literal of its name) and a ``from_config``
classmethod that builds it. Docker and Podman are registered by reference, so their client library is
imported only when an engine of theirs is used. Another package adds a type through the
``intercode_agents.backends`` entry point group, a script with ``@register_backend`` on its class.
"""

from __future__ import annotations

import inspect
import json
import os
from collections.abc import Mapping
from typing import Any, Literal, Protocol, cast
from urllib.parse import parse_qs

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from intercode_agents.errors import ConfigError
from intercode_agents.plugins import Registry
from intercode_agents.sandbox.contract import Backend

BACKEND_ENV = "INTERCODE_BACKEND"


class BackendConfig(BaseModel):
    """What every backend config has: its ``type``, an optional display ``name``, and ``slots``, the
    sandboxes the engine should hold at once when work is spread over several engines."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: str
    name: str | None = None
    slots: int = Field(default=16, ge=1)


class DockerConfig(BackendConfig):
    """A Docker engine. ``host``: a ``DOCKER_HOST`` value (None: ``$DOCKER_HOST`` or the local
    socket). ``fast_paths``: read the container from this host where it can (a local engine, root)."""

    type: Literal["docker"] = "docker"
    host: str | None = None
    fast_paths: bool = True


class PodmanConfig(BackendConfig):
    """Podman through its Docker-compatible API service (``podman system service``)."""

    type: Literal["podman"] = "podman"
    host: str = "unix:///run/podman/podman.sock"
    nofile: int = 1024  # the rlimits named with the disk guard's (see sandbox/docker/podman.py)
    nproc: int = 4096


class BackendType(Protocol):
    """What the registry holds: a backend class, its config class, and how one builds the other."""

    __name__: str
    config_class: type[BackendConfig]

    def from_config(self, config: Any) -> Backend: ...


def _backend_class(obj: object, what: str) -> BackendType:
    """``obj`` if it is a concrete Backend subclass with a ``config_class`` and a ``from_config``
    (else a ConfigError naming ``what``)."""
    if not (isinstance(obj, type) and issubclass(obj, Backend)):
        kind = f"the class {obj.__name__}" if isinstance(obj, type) else f"a {type(obj).__name__}"
        raise ConfigError(f"{what} is {kind}, not a subclass of intercode_agents.sandbox.Backend")
    if inspect.isabstract(obj):
        missing = ", ".join(sorted(getattr(obj, "__abstractmethods__", ())))
        raise ConfigError(f"{what}: {obj.__name__} does not implement {missing}")
    config_class = getattr(obj, "config_class", None)
    if not (isinstance(config_class, type) and issubclass(config_class, BackendConfig)):
        raise ConfigError(f"{what}: {obj.__name__} needs a `config_class`, a BackendConfig subclass")
    if not callable(getattr(obj, "from_config", None)):
        raise ConfigError(f"{what}: {obj.__name__} needs a `from_config(config)` classmethod")
    return cast(BackendType, obj)


BACKENDS: Registry[BackendType] = Registry("backend", "intercode_agents.backends", _backend_class)
BACKENDS.add_lazy("docker", "intercode_agents.sandbox.docker.backend:DockerBackend")
BACKENDS.add_lazy("podman", "intercode_agents.sandbox.docker.podman:PodmanBackend")
_instances: dict[BackendConfig, Backend] = {}


def register_backend(cls: type[Backend], *, replace: bool = False) -> type[Backend]:
    """Make the backend class ``cls`` available under its ``type`` (as engine strings and configs
    name it); usable as a class decorator."""
    BACKENDS.add(getattr(cls, "type", ""), cls, replace=replace, origin=f"backend {cls!r}")
    return cls


def parse_config(value: BackendConfig | Mapping[str, Any] | str) -> BackendConfig:
    """A validated config from a mapping, a config object or an engine string."""
    if isinstance(value, BackendConfig):
        return value
    if isinstance(value, str):
        return _parse_engine(value)
    if not isinstance(value, Mapping):
        raise ConfigError(
            f"a backend is a mapping with a 'type', an engine string or a Backend, not {value!r}"
        )
    kind = value.get("type", "docker")
    if kind not in BACKENDS:
        raise ConfigError(f"unknown backend type {kind!r}; known: {', '.join(BACKENDS.names())}")
    try:
        return BACKENDS.get(kind).config_class.model_validate({**value, "type": kind})
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"bad {kind} backend config: {problems}") from None


def _parse_engine(text: str) -> BackendConfig:
    """``[TYPE:]ADDRESS[?slots=N]`` (a JSON object is read as a mapping)."""
    text = text.strip()
    if text.startswith("{"):
        try:
            return parse_config(json.loads(text))
        except json.JSONDecodeError as exc:
            raise ConfigError(f"bad backend JSON {text!r}: {exc}") from None
    address, _, query = text.partition("?")
    options: dict[str, Any] = {}
    for key, values in parse_qs(query, keep_blank_values=True).items():
        options[key] = values[-1]
    kind, sep, rest = address.partition(":")
    if sep and kind in BACKENDS and not rest.startswith("//"):
        address = rest
    elif address in BACKENDS:
        kind, address = address, ""
    else:
        kind = "docker"
    if not address and kind == "docker":
        pass
    elif "://" not in address:
        raise ConfigError(
            f"bad engine {text!r}: expected [TYPE:]ADDRESS[?slots=N] with an address such as "
            "unix:///run/docker.sock or tcp://127.0.0.1:2376"
        )
    else:
        options["host"] = address
    return parse_config({"type": kind, **options})


def resolve_backend(value: Backend | BackendConfig | Mapping[str, Any] | str | None = None) -> Backend:
    """The backend ``value`` names (see the module docstring); one object per config in a process."""
    if isinstance(value, Backend):
        return value
    if value is None:
        value = os.environ.get(BACKEND_ENV) or DockerConfig()
    config = parse_config(value)
    backend = _instances.get(config)
    if backend is None:
        backend = _instances[config] = BACKENDS.get(config.type).from_config(config)
    return backend


def default_backend() -> Backend:
    return resolve_backend(None)


def config_of(backend: Backend) -> BackendConfig | None:
    """The config ``backend`` was made from in this process (None: it was made by hand)."""
    return next((config for config, made in _instances.items() if made is backend), None)


def known_backends() -> list[Backend]:
    """Every backend this process made (the exit hook and clean-up visit each)."""
    return list(_instances.values())


async def check_engine(backend: Backend | BackendConfig | Mapping[str, Any] | str | None = None) -> str:
    """Ping ``backend``'s engine (the default one); return its version or raise EngineUnavailable."""
    return await resolve_backend(backend).ping()


async def image_exists(
    ref: str, backend: Backend | BackendConfig | Mapping[str, Any] | str | None = None
) -> bool:
    return await resolve_backend(backend).image(ref) is not None


async def close_engines() -> None:
    """Close the running loop's connections to every engine (they close with the loop otherwise)."""
    for backend in known_backends():
        await backend.close()


close_docker_client = close_engines  # the name before backends existed

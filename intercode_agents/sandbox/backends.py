"""Choosing a backend: typed configs with a ``type`` field, engine strings, and third-party backends.

A backend is named by

- a config mapping or object, ``{"type": "docker", "host": "unix:///run/d2.sock", "slots": 8}``
  (:class:`DockerConfig`, :class:`PodmanConfig`, or a third party's), as in an env's YAML
  (``backend:``) or ``make_env("bash", backend={...})``;
- an engine string ``[TYPE:]ADDRESS[?slots=N]``: ``unix:///run/d2.sock``, ``tcp://127.0.0.1:2376``,
  ``podman:unix:///run/podman/podman.sock``, ``docker`` (the local engine), as ``--backend`` and
  ``--engines`` take them;
- a :class:`~intercode_agents.sandbox.contract.Backend` instance.

Equal configs give the same backend object in a process, so that its clients, its count of live
sandboxes and its health are shared by every sandbox on that engine. With nothing said, the backend is
``$INTERCODE_BACKEND`` (an engine string or JSON) or the local Docker engine (``$DOCKER_HOST`` applies).

Another package adds a backend type through the ``intercode_agents.backends`` entry point group: the
entry point names a :class:`~intercode_agents.sandbox.contract.Backend` subclass whose ``config_class``
is a :class:`BackendConfig` subclass with its own ``type`` literal and whose ``from_config`` builds it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import Any, ClassVar, Literal
from urllib.parse import parse_qs

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from intercode_agents.errors import ConfigError
from intercode_agents.sandbox.contract import Backend

ENTRY_POINT_GROUP = "intercode_agents.backends"
BACKEND_ENV = "INTERCODE_BACKEND"


class BackendConfig(BaseModel):
    """What every backend config has: its ``type``, an optional display ``name``, and ``slots``, the
    sandboxes the engine should hold at once when work is spread over several engines."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: str
    name: str | None = None
    slots: int = Field(16, ge=1)


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


def _docker(config: DockerConfig) -> Backend:
    from intercode_agents.sandbox.docker.backend import DockerBackend

    return DockerBackend(config.host, name=config.name, slots=config.slots, fast_paths=config.fast_paths)


def _podman(config: PodmanConfig) -> Backend:
    from intercode_agents.sandbox.docker.podman import PodmanBackend

    return PodmanBackend(
        config.host, name=config.name, slots=config.slots, nofile=config.nofile, nproc=config.nproc
    )


class _Kind:
    def __init__(self, config_class: type[BackendConfig], build: Any) -> None:
        self.config_class = config_class
        self.build = build


_KINDS: dict[str, _Kind] = {"docker": _Kind(DockerConfig, _docker), "podman": _Kind(PodmanConfig, _podman)}
_loaded_entry_points = False
_instances: dict[BackendConfig, Backend] = {}


class PluginBackend(Backend):
    """What a third-party backend class provides besides the contract (for the entry point)."""

    config_class: ClassVar[type[BackendConfig]]

    @classmethod
    def from_config(cls, config: BackendConfig) -> Backend:
        raise NotImplementedError


def register_backend(type_name: str, config_class: type[BackendConfig], build: Any) -> None:
    """Add a backend type: ``build(config)`` makes the backend of a validated ``config_class``."""
    _KINDS[type_name] = _Kind(config_class, build)


def _kinds() -> dict[str, _Kind]:
    global _loaded_entry_points
    if not _loaded_entry_points:
        _loaded_entry_points = True
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            if ep.name in _KINDS:
                continue
            try:
                cls = ep.load()
                register_backend(ep.name, cls.config_class, cls.from_config)
            except Exception as exc:  # a broken plugin names itself, and the rest still work
                raise ConfigError(
                    f"backend entry point {ep.name!r} ({ep.value}) cannot be loaded: {exc}"
                ) from exc
    return _KINDS


def backend_types() -> list[str]:
    return sorted(_kinds())


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
    kinds = _kinds()
    if kind not in kinds:
        raise ConfigError(f"unknown backend type {kind!r}; known: {', '.join(sorted(kinds))}")
    try:
        return kinds[kind].config_class.model_validate({**value, "type": kind})
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
    kinds = _kinds()
    kind, sep, rest = address.partition(":")
    if sep and kind in kinds and not rest.startswith("//"):
        address = rest
    elif address in kinds:
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
        backend = _instances[config] = _kinds()[config.type].build(config)
    return backend


def default_backend() -> Backend:
    return resolve_backend(None)


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

"""Env definitions as data: an env YAML names its class, options, tasks, images and prompt texts.

The shipped envs live in ``envs/<name>.yaml``. A user adds an environment without editing the package
by writing such a file anywhere (see ``examples/custom_env/``) and passing its path wherever an env
name goes (``make_env("examples/custom_env/jq.yaml")``, ``intercode-agents eval PATH.yaml``). Keys:

- ``name``: the env's name (task ids start with it); ``class``: ``module:Class`` or ``PATH.py:Class``
  (relative to the YAML) of an :class:`~intercode_agents.envs.base.Env` subclass;
- ``options``: keyword arguments of the class;
- ``tasks``: where the tasks come from (see :mod:`intercode_agents.datasets.sources`);
- ``images``: rows of the image table for the env's own images (see ``docker/images.yaml``; a
  ``folder`` is relative to the YAML);
- ``caveats``: a YAML file (relative to this one) listing golds that cannot be scored as the paper
  scored them (see :mod:`intercode_agents.datasets.gold_caveats`);
- ``prompts``: the env's texts for the strategies (``name``, ``environment``, ``submit`` and, for
  envs that name a function, ``entry_point``), used where a prompt file has none for the env.

Once a YAML file is loaded, its env is known by name in the process, so its task ids resolve.

Why this module sits below every layer that names envs: the datasets, the image table, the envs,
the runner and the front ends all turn an env name into its definition, and none of them needs the
``Env`` class for that. A definition is read once per file and version (:func:`load_spec` caches by
path and modification time), so one ``eval`` resolves its env name once, however many layers ask.
The class is imported only when asked for (:meth:`EnvSpec.load_class`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from intercode_agents.errors import ConfigError
from intercode_agents.paths import data_dir
from intercode_agents.plugins import Registry
from intercode_agents.user_code import load_object

_KEYS = {"name", "class", "description", "options", "tasks", "images", "prompts", "caveats"}
_PROMPT_KEYS = {"name", "environment", "submit", "entry_point"}


def _yaml_file(obj: object, what: str) -> Path:
    """``obj`` as the path of an existing env YAML file (else a ConfigError naming ``what``)."""
    path = Path(obj) if isinstance(obj, str | Path) else None
    if path is None or path.suffix not in (".yaml", ".yml") or not path.is_file():
        raise ConfigError(f"{what} is {obj!r}, not the path of an env YAML file")
    return path.resolve()


#: Env names and their YAML files: the shipped envs, another package's (entry point group
#: ``intercode_agents.envs``: a ``str`` or ``Path`` attribute holding a YAML path) and every user env
#: loaded in this process (:func:`register_env`, which :func:`load_spec` calls for a path).
ENVS: Registry[Path] = Registry("env", "intercode_agents.envs", _yaml_file)
for _shipped in sorted(data_dir("envs").glob("*.yaml")):
    ENVS.add(_shipped.stem, _shipped)


@dataclass(frozen=True)
class EnvSpec:
    """One env definition, read from its YAML file."""

    name: str
    path: Path  # the YAML file
    class_ref: str
    description: str = ""
    options: dict[str, Any] = field(default_factory=dict)
    tasks: dict[str, Any] = field(default_factory=dict)
    images: dict[str, Any] = field(default_factory=dict)
    prompts: dict[str, str] = field(default_factory=dict)
    caveats: str | None = None  # the file (beside the YAML) declaring golds that cannot be scored as usual

    @property
    def folder(self) -> Path:
        return self.path.parent

    def load_class(self) -> type[Any]:
        """The class the definition names (imported now; :func:`intercode_agents.envs.registry.env_class`
        also checks that it is an ``Env``)."""
        head, sep, attr = self.class_ref.rpartition(":")
        ref = self.class_ref
        if sep and head.endswith(".py") and not Path(head).is_absolute():
            ref = f"{self.folder / head}:{attr}"
        return load_object(ref, f"env class of {self.path}").obj


def env_names() -> list[str]:
    """The shipped envs, those of installed packages and the user envs loaded in this process."""
    return ENVS.names()


def register_env(path: str | Path) -> EnvSpec:
    """Make the env defined in the YAML file ``path`` known by its name in this process."""
    return load_spec(Path(path))


def _is_path(name_or_path: str | Path) -> bool:
    return Path(name_or_path).suffix in (".yaml", ".yml")


def spec_file(name_or_path: str | Path) -> Path:
    """The YAML file of an env given by name or path (ConfigError naming the known envs)."""
    if _is_path(name_or_path):
        path = Path(name_or_path).expanduser()
        if not path.is_file():
            raise ConfigError(f"the env definition {path} does not exist")
        return path.resolve()
    if str(name_or_path) in ENVS:
        return ENVS.get(str(name_or_path))
    raise ConfigError(
        f"unknown env {str(name_or_path)!r}; choose one of {', '.join(env_names())} "
        "or give the path of an env YAML file"
    )


def _mapping(value: Any, key: str, path: Path) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"env definition {path}: {key!r} must be a mapping, got {value!r}")
    return value


def load_spec(name_or_path: str | Path) -> EnvSpec:
    """Read an env definition by name (a shipped env or a user env loaded before) or by YAML path."""
    path = spec_file(name_or_path)
    try:
        stamp = path.stat().st_mtime_ns
    except OSError as exc:
        raise ConfigError(f"cannot read env definition {path}: {exc}") from exc
    spec = _read_spec(path, stamp)
    earlier = ENVS.find(spec.name)
    if earlier is None:
        ENVS.add(spec.name, path)
    elif earlier != path:
        raise ConfigError(f"env definition {path}: the name {spec.name!r} is already used by {earlier}")
    return spec


@functools.lru_cache(maxsize=256)
def _read_spec(path: Path, stamp: int) -> EnvSpec:
    """The definition in ``path`` as of modification time ``stamp`` (the cache key)."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read env definition {path}: {exc}") from exc
    if not isinstance(raw, dict) or not isinstance(raw.get("class"), str):
        raise ConfigError(f"env definition {path} needs a mapping with a 'class: module:Class' entry")
    unknown = set(raw) - _KEYS
    if unknown:
        raise ConfigError(
            f"env definition {path} has unknown keys {sorted(unknown)}; allowed: {sorted(_KEYS)}"
        )
    name = raw.get("name", path.stem)
    if not isinstance(name, str) or not name.isidentifier():
        raise ConfigError(
            f"env definition {path}: 'name' must be a plain word (letters, digits, _), got {name!r}"
        )
    prompts = _mapping(raw.get("prompts"), "prompts", path)
    if set(prompts) - _PROMPT_KEYS or not all(isinstance(v, str) for v in prompts.values()):
        raise ConfigError(f"env definition {path}: 'prompts' maps {sorted(_PROMPT_KEYS)} to texts")
    shipped = data_dir("envs") / f"{name}.yaml"
    if shipped.is_file() and shipped.resolve() != path.resolve():
        raise ConfigError(f"env definition {path}: the name {name!r} is taken by a shipped env")
    spec = EnvSpec(
        name=name,
        path=path,
        class_ref=raw["class"],
        description=str(raw.get("description") or ""),
        options=_mapping(raw.get("options"), "options", path),
        tasks=_mapping(raw.get("tasks"), "tasks", path),
        images=_mapping(raw.get("images"), "images", path),
        prompts=prompts,
        caveats=str(raw["caveats"]) if raw.get("caveats") else None,
    )
    return spec

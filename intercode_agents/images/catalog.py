"""The image table (``docker/images.yaml``): each image's Dockerfile folder, parent and extra files."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from intercode_agents.errors import ConfigError
from intercode_agents.paths import data_dir

IMAGE_PREFIX = "intercode-agents/"
BASE_PARENT = "base"
CATALOG_FILE = "images.yaml"
SOURCE_KINDS = ("data", "envs")
_KEYS = {"folder", "parent", "files", "optional", "requires", "helpers"}


#: The tag of every project image; set it to keep a second set of images beside the default one
#: (a branch whose Dockerfiles differ, say) in the same engine.
TAG_ENV = "INTERCODE_AGENTS_IMAGE_TAG"


def image_ref(name: str) -> str:
    """The tag of a project image: ``"bash"`` -> ``"intercode-agents/bash:latest"`` (the tag comes
    from ``$INTERCODE_AGENTS_IMAGE_TAG`` when set)."""
    return f"{IMAGE_PREFIX}{name}:{os.environ.get(TAG_ENV) or 'latest'}"


@dataclass(frozen=True)
class ImageSpec:
    """One row of the table: how to build ``intercode-agents/<name>``."""

    name: str
    folder: Path  # holds the Dockerfile (and files it COPYs)
    parent: str  # BASE_PARENT or another image's name
    files: dict[str, str] = field(default_factory=dict)  # path in the build context -> "kind:path"
    optional: frozenset[str] = frozenset()  # context files that may be missing
    requires: frozenset[str] = frozenset()  # context files without which the image is skipped
    helpers: bool = False  # the build context gets docker/helpers/ as helpers/

    @property
    def ref(self) -> str:
        return image_ref(self.name)


def default_docker_dir() -> Path:
    return data_dir("docker")


def _str_list(value: Any, where: str) -> frozenset[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where} must be a list of strings, got {value!r}")
    return frozenset(value)


def _parse_spec(name: str, row: Any, docker_dir: Path, table: Path) -> ImageSpec:
    where = f"{table}: image {name!r}"
    if not isinstance(row, dict):
        raise ConfigError(f"{where} must be a mapping, got {row!r}")
    unknown = set(row) - _KEYS
    if unknown:
        raise ConfigError(f"{where} has unknown keys {sorted(unknown)}; allowed: {sorted(_KEYS)}")
    folder = docker_dir / str(row.get("folder", name))
    if not (folder / "Dockerfile").is_file():
        raise ConfigError(f"{where}: no Dockerfile in {folder}")
    parent = row.get("parent", BASE_PARENT)
    files = row.get("files") or {}
    if not isinstance(parent, str):
        raise ConfigError(f"{where}: 'parent' must be a string, got {parent!r}")
    if not isinstance(files, dict):
        raise ConfigError(f"{where}: 'files' must map context paths to sources, got {files!r}")
    for dest, source in files.items():
        kind = str(source).partition(":")[0]
        if kind not in SOURCE_KINDS or ":" not in str(source):
            raise ConfigError(f"{where}: source {source!r} of {dest!r} must start with one of {SOURCE_KINDS}")
        if Path(dest).is_absolute() or ".." in Path(dest).parts:
            raise ConfigError(f"{where}: context path {dest!r} must be relative and stay inside the context")
    optional = _str_list(row.get("optional", []), f"{where}: 'optional'")
    requires = _str_list(row.get("requires", []), f"{where}: 'requires'")
    stray = (optional | requires) - set(files)
    if stray:
        raise ConfigError(f"{where}: {sorted(stray)} are not among its 'files'")
    helpers = row.get("helpers", False)
    if not isinstance(helpers, bool):
        raise ConfigError(f"{where}: 'helpers' must be true or false, got {helpers!r}")
    files = {str(k): str(v) for k, v in files.items()}
    return ImageSpec(name, folder, parent, files, optional, requires, helpers)


def _build_order(specs: dict[str, ImageSpec]) -> list[str]:
    """Names with every parent before its children; otherwise in table order."""
    order: list[str] = []
    visiting: set[str] = set()

    def visit(name: str) -> None:
        if name in order:
            return
        if name in visiting:
            raise ConfigError(f"image parents form a cycle through {name!r}")
        visiting.add(name)
        parent = specs[name].parent
        if parent != BASE_PARENT:
            if parent not in specs:
                raise ConfigError(f"image {name!r} has an unknown parent {parent!r}")
            visit(parent)
        visiting.discard(name)
        order.append(name)

    for name in specs:
        visit(name)
    return order


def load_catalog(docker_dir: Path | None = None) -> dict[str, ImageSpec]:
    """Read ``<docker_dir>/images.yaml``; the result is ordered for building (dependencies first)."""
    docker_dir = Path(docker_dir) if docker_dir is not None else default_docker_dir()
    table = docker_dir / CATALOG_FILE
    try:
        raw = yaml.safe_load(table.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"the image table {table} is missing") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"the image table {table} is not valid YAML: {exc}") from None
    rows = raw.get("images") if isinstance(raw, dict) else None
    if not isinstance(rows, dict) or not rows:
        raise ConfigError(f"{table} must have a non-empty 'images' mapping")
    specs = {str(name): _parse_spec(str(name), row, docker_dir, table) for name, row in rows.items()}
    return {name: specs[name] for name in _build_order(specs)}


def env_images(env: str | Path, catalog: dict[str, ImageSpec] | None = None) -> dict[str, ImageSpec]:
    """The images an env YAML declares under ``images`` (rows as in ``images.yaml``; a ``folder`` is
    relative to the YAML, default the YAML's own folder), after the project's catalog, ordered for
    building. Their parent is ``base`` or a project image."""
    from intercode_agents.spec import load_spec

    spec = load_spec(env)
    catalog = dict(catalog if catalog is not None else load_catalog())
    own: dict[str, ImageSpec] = {}
    for name, row in spec.images.items():
        if str(name) in catalog:
            raise ConfigError(
                f"{spec.path}: image {name!r} is a project image; give the env's image its own name"
            )
        row = {"folder": ".", **row} if isinstance(row, dict) else row
        own[str(name)] = _parse_spec(str(name), row, spec.folder, spec.path)
    merged = {**catalog, **own}
    return {name: merged[name] for name in _build_order(merged)}


def known_images(docker_dir: Path | None = None) -> list[str]:
    """The project's image names in build order (dependencies first)."""
    return list(load_catalog(docker_dir))


def select_images(catalog: dict[str, ImageSpec], names: list[str] | None) -> list[ImageSpec]:
    """The requested images plus their parents, in build order. Unknown names are a ConfigError."""
    if names is None:
        return list(catalog.values())
    if isinstance(names, str):
        names = [names]
    unknown = [n for n in names if n not in catalog]
    if unknown:
        raise ConfigError(
            f"unknown image(s) {', '.join(map(repr, unknown))}; known images: {', '.join(catalog)}"
        )
    wanted: set[str] = set()
    for name in names:
        while name != BASE_PARENT and name not in wanted:
            wanted.add(name)
            name = catalog[name].parent
    return [spec for name, spec in catalog.items() if name in wanted]

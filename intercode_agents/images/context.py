"""Build contexts: the image folder, ``helpers/`` and the image's extra files, plus their hash."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

from intercode_agents.datasets.manifest import family_of
from intercode_agents.errors import ConfigError, DatasetError
from intercode_agents.images.catalog import ImageSpec
from intercode_agents.paths import data_dir

HELPERS_DIR = "helpers"
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".*")
# Bump when the hash recipe changes, so every image is rebuilt once.
_HASH_VERSION = "1"


class MissingRequirement(Exception):
    """A file the image ``requires`` is absent: the image is skipped, not failed."""


def data_families(specs: list[ImageSpec]) -> list[str]:
    """The task families whose files these images take from the data root."""
    found = set()
    for spec in specs:
        for source in spec.files.values():
            kind, _, rel = source.partition(":")
            if kind == "data":
                found.add(family_of(rel))
    return sorted(fam for fam in found if fam is not None)


def _resolve_data_root(explicit: Path | None, families: list[str]) -> Path:
    try:
        from intercode_agents.datasets import resolve_data_root
    except ImportError:
        if explicit is not None:
            return Path(explicit)
        env = os.environ.get("INTERCODE_DATA")
        if not env:
            raise DatasetError(
                "the InterCode data root is unknown: pass data_root=... or set INTERCODE_DATA "
                "to the folder that holds data/ and docker/bash_scripts/"
            ) from None
        return Path(env)
    return Path(resolve_data_root(explicit, families=families or None))


class SourceResolver:
    """Turns ``"data:<path>"`` and ``"envs:<path>"`` into files; finds the data root only when needed."""

    def __init__(self, data_root: Path | None, families: list[str]) -> None:
        self._explicit = data_root
        self._families = families
        self._data_root: Path | None = None

    @property
    def data_root(self) -> Path:
        if self._data_root is None:
            self._data_root = _resolve_data_root(self._explicit, self._families)
        return self._data_root

    def resolve(self, source: str) -> Path:
        kind, _, rel = source.partition(":")
        if kind == "data":
            return self.data_root / rel
        try:
            return data_dir("envs") / rel
        except FileNotFoundError:
            return Path("envs") / rel  # no envs/ folder: reported as a missing file


def assemble_context(spec: ImageSpec, helpers: Path, dest: Path, sources: SourceResolver) -> None:
    """Fill ``dest`` with the build context of ``spec``.

    Raises MissingRequirement when a ``requires`` file is absent and DatasetError when any other
    non-optional file is.
    """
    shutil.copytree(spec.folder, dest, ignore=_IGNORE, dirs_exist_ok=True)
    if spec.helpers:
        if not helpers.is_dir():
            raise ConfigError(f"image {spec.name!r} needs the helper programs, but {helpers} is missing")
        shutil.copytree(helpers, dest / HELPERS_DIR, ignore=_IGNORE, dirs_exist_ok=True)
    for rel, source in spec.files.items():
        path = sources.resolve(source)
        if not path.is_file():
            if rel in spec.optional:
                continue
            if rel in spec.requires:
                raise MissingRequirement(f"{path} is missing")
            raise DatasetError(f"image {spec.name!r} needs {path} ({source}), which does not exist")
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)


def input_hash(context: Path, parent_id: str, build_args: dict[str, str]) -> str:
    """sha256 over every context file (path, executable bit, bytes), the build args and the parent's ID."""
    digest = hashlib.sha256(f"intercode-agents-image-v{_HASH_VERSION}\0parent={parent_id}\0".encode())
    for key in sorted(build_args):
        digest.update(f"arg {key}={build_args[key]}\0".encode())
    for path in sorted(p for p in context.rglob("*") if p.is_file()):
        rel = path.relative_to(context).as_posix()
        executable = "x" if os.access(path, os.X_OK) else "-"
        digest.update(f"file {rel} {executable} {path.stat().st_size}\0".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()

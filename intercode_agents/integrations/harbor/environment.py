"""The ``environment/`` of an exported Harbor task: one Dockerfile that builds the task's sandbox.

Our images are a chain (``bash`` <- ``ctf``, see docker/images.yaml), each built from its own
Dockerfile on its parent. Harbor builds one Dockerfile from one folder, so the chain becomes stages
of one multi-stage Dockerfile: each image's Dockerfile as it is, its ``FROM ${PARENT}`` made the
parent's stage, the files it copies in a sub-folder named after it (its build context, assembled by
the same code that builds our images). The first stage keeps ``ARG BASE`` (Debian by default), so a
machine without a registry passes the base image it has, as ``intercode-agents images build`` does.
"""

from __future__ import annotations

import re
from pathlib import Path

from intercode_agents.errors import ConfigError
from intercode_agents.images.catalog import BASE_PARENT, ImageSpec, default_docker_dir, load_catalog
from intercode_agents.images.context import HELPERS_DIR, SourceResolver, assemble_context, data_families

_FROM_PARENT = re.compile(r"^FROM\s+\$\{?PARENT\}?\s*$", re.IGNORECASE)
_FROM_BASE = re.compile(r"^FROM\s+\$\{?BASE\}?\s*$", re.IGNORECASE)
_ARG_PARENT = re.compile(r"^ARG\s+PARENT\b", re.IGNORECASE)
_COPY = re.compile(r"^(COPY|ADD)\s+(.*)$", re.IGNORECASE)


def image_chain(image: str, catalog: dict[str, ImageSpec]) -> list[ImageSpec]:
    """The image and its parents, the base's child first."""
    chain: list[ImageSpec] = []
    name = image
    while True:
        if name not in catalog:
            raise ConfigError(
                f"image {name!r} is not in docker/images.yaml, so its sandbox cannot be exported"
            )
        chain.insert(0, catalog[name])
        if catalog[name].parent == BASE_PARENT:
            return chain
        name = catalog[name].parent


def _copy_line(line: str, folder: str) -> str:
    """A COPY/ADD of a stage, its sources moved into the stage's sub-folder."""
    match = _COPY.match(line)
    if match is None:
        return line
    words = match.group(2).split()
    flags = [w for w in words if w.startswith("--")]
    if any(flag.startswith("--from") for flag in flags):
        return line
    paths = [w for w in words if not w.startswith("--")]
    sources, target = paths[:-1], paths[-1]
    return " ".join([match.group(1), *flags, *(f"{folder}/{s}" for s in sources), target])


def _stage(spec: ImageSpec) -> str:
    lines = []
    for line in (spec.folder / "Dockerfile").read_text(encoding="utf-8").splitlines():
        stripped = line.strip()
        if _ARG_PARENT.match(stripped):
            continue
        if _FROM_PARENT.match(stripped):
            line = f"FROM {spec.parent} AS {spec.name}"
        elif _FROM_BASE.match(stripped):
            line = f"FROM ${{BASE}} AS {spec.name}"
        else:
            line = _copy_line(line, spec.name)
        lines.append(line)
    return "\n".join(lines).rstrip() + "\n"


def write_environment(
    image: str,
    dest: Path,
    *,
    tail: str = "",
    data_root: Path | None = None,
    docker_dir: Path | None = None,
) -> Path:
    """Write ``dest/Dockerfile`` (and each stage's files) building ``image``; ``tail`` is appended to
    the last stage (the task's own files). Returns the Dockerfile's path."""
    root = docker_dir or default_docker_dir()
    chain = image_chain(image, load_catalog(root))
    sources = SourceResolver(data_root, data_families(chain))
    stages = []
    for spec in chain:
        assemble_context(spec, root / HELPERS_DIR, dest / spec.name, sources)
        (dest / spec.name / "Dockerfile").unlink()  # the stage's text is in the one Dockerfile
        stages.append(
            f"# --- {spec.name}: docker/{spec.folder.name}/Dockerfile of intercode-agents ---\n{_stage(spec)}"
        )
    dockerfile = dest / "Dockerfile"
    dockerfile.write_text(
        "\n".join(stages) + (f"\n# --- the task ---\n{tail}" if tail else ""), encoding="utf-8"
    )
    return dockerfile

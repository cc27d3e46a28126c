"""Build the project's images with docker-py, skipping those whose inputs did not change."""

from __future__ import annotations

import re
import tempfile
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import docker.errors
import requests

from intercode_agents.errors import ConfigError, EngineUnavailable, ImageBuildError
from intercode_agents.images.base_image import resolve_base
from intercode_agents.images.catalog import (
    BASE_PARENT,
    ImageSpec,
    default_docker_dir,
    env_images,
    load_catalog,
    select_images,
)
from intercode_agents.images.context import (
    HELPERS_DIR,
    MissingRequirement,
    SourceResolver,
    assemble_context,
    data_families,
    input_hash,
)

HASH_LABEL = "org.intercode-agents.input-hash"
NAME_LABEL = "org.intercode-agents.image"
BUILD_TIMEOUT_S = 3600  # per read of the build stream: a quiet apt step must not time out
LOG_TAIL_LINES = 40
_ANSI = re.compile(r"\x1b\[[0-9;]*m")

Status = Literal["built", "up to date", "skipped"]


@dataclass(frozen=True)
class BuildResult:
    name: str
    ref: str
    status: Status
    image_id: str | None = None
    size_bytes: int | None = None
    seconds: float = 0.0
    input_hash: str | None = None
    detail: str = ""  # why an image was skipped
    replaced_id: str | None = None  # the image the tag pointed at before this build

    @property
    def size(self) -> int | None:
        """Alias of ``size_bytes``."""
        return self.size_bytes


def engine_client(timeout: int = BUILD_TIMEOUT_S) -> docker.APIClient:
    """A low-level client configured from the environment (DOCKER_HOST, ...); EngineUnavailable if down."""
    try:
        api = docker.from_env(timeout=timeout).api
        api.ping()
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        raise EngineUnavailable(str(exc)) from None
    return api


def _find_by_hash(api: docker.APIClient, ref: str, digest: str) -> str | None:
    """The ID of an image already built from these inputs (re-tagged as ``ref``), else None."""
    try:
        current = api.inspect_image(ref)
        if (current["Config"].get("Labels") or {}).get(HASH_LABEL) == digest:
            return str(current["Id"])
    except docker.errors.ImageNotFound:
        pass
    matches = api.images(filters={"label": f"{HASH_LABEL}={digest}"}, quiet=True)
    if not matches:
        return None
    repo, _, tag = ref.rpartition(":")
    api.tag(matches[0], repo, tag)
    return matches[0]


def _run_build(
    api: docker.APIClient,
    spec: ImageSpec,
    context: Path,
    build_args: dict[str, str],
    labels: dict[str, str],
    nocache: bool,
    log: Callable[[str], None],
) -> None:
    tail: deque[str] = deque(maxlen=LOG_TAIL_LINES)
    try:
        stream = api.build(
            path=str(context),
            tag=spec.ref,
            buildargs=build_args,
            labels=labels,
            network_mode="host",
            rm=True,
            forcerm=True,
            nocache=nocache,
            pull=False,
            decode=True,
        )
        for chunk in stream:
            for line in _ANSI.sub("", str(chunk.get("stream", ""))).splitlines():
                if line.strip():
                    tail.append(line)
                    log(f"  {line}")
            if "error" in chunk:
                raise ImageBuildError(spec.name, str(chunk["error"]).strip(), list(tail))
    except docker.errors.APIError as exc:
        raise ImageBuildError(spec.name, exc.explanation or str(exc), list(tail)) from None
    except requests.exceptions.RequestException as exc:
        raise EngineUnavailable(f"lost the engine while building {spec.name!r}: {exc}") from None


def _build_one(
    api: docker.APIClient,
    spec: ImageSpec,
    parent_ref: str,
    helpers: Path,
    sources: SourceResolver,
    force: bool,
    log: Callable[[str], None],
) -> BuildResult:
    arg = "BASE" if spec.parent == BASE_PARENT else "PARENT"
    build_args = {arg: parent_ref}
    parent_id = api.inspect_image(parent_ref)["Id"]
    with tempfile.TemporaryDirectory(prefix=f"intercode-build-{spec.name}-") as tmp:
        context = Path(tmp)
        try:
            assemble_context(spec, helpers, context, sources)
        except MissingRequirement as exc:
            log(f"{spec.name}: skipped ({exc})")
            return BuildResult(spec.name, spec.ref, "skipped", detail=str(exc))
        digest = input_hash(context, parent_id, build_args)
        if not force:
            existing = _find_by_hash(api, spec.ref, digest)
            if existing is not None:
                log(f"{spec.name}: up to date ({spec.ref})")
                return BuildResult(
                    spec.name, spec.ref, "up to date", existing, _size(api, existing), 0.0, digest
                )
        previous = _current_id(api, spec.ref)
        log(f"{spec.name}: building {spec.ref} on {parent_ref}")
        started = time.monotonic()
        labels = {HASH_LABEL: digest, NAME_LABEL: spec.name}
        _run_build(api, spec, context, build_args, labels, force, log)
        seconds = time.monotonic() - started
    image_id = api.inspect_image(spec.ref)["Id"]
    size = _size(api, image_id)
    log(f"{spec.name}: built in {seconds:.1f} s, {size / 1e6:.0f} MB ({image_id[7:19]})")
    replaced = previous if previous not in (None, image_id) else None
    return BuildResult(spec.name, spec.ref, "built", image_id, size, seconds, digest, replaced_id=replaced)


def _size(api: docker.APIClient, image_id: str) -> int:
    return int(api.inspect_image(image_id).get("Size") or 0)


def _current_id(api: docker.APIClient, ref: str) -> str | None:
    try:
        return str(api.inspect_image(ref)["Id"])
    except docker.errors.ImageNotFound:
        return None


def _remove_superseded(api: docker.APIClient, results: list[BuildResult], log: Callable[[str], None]) -> None:
    """Delete the images that rebuilt tags pointed at, children first; keep those still in use."""
    for result in reversed(results):
        old = result.replaced_id
        if old is None:
            continue
        try:
            info = api.inspect_image(old)
            if info.get("RepoTags") or (info["Config"].get("Labels") or {}).get(NAME_LABEL) != result.name:
                continue
            api.remove_image(old)
            log(f"{result.name}: removed the previous image {old[7:19]}")
        except docker.errors.APIError as exc:  # in use by a container, or gone already
            log(f"{result.name}: kept the previous image {old[7:19]} ({exc.explanation or exc})")


def build_images(
    names: list[str] | None = None,
    *,
    base: str = "auto",
    force: bool = False,
    data_root: Path | None = None,
    log: Callable[[str], None] = print,
    docker_dir: Path | None = None,
    envs: list[str | Path] | None = None,
) -> list[BuildResult]:
    """Build ``names`` (default: every image) and their parents, dependencies first.

    An image whose inputs (Dockerfile folder, helpers, extra files, parent image ID) are unchanged
    is skipped; ``force=True`` rebuilds without the layer cache. ``base`` is "auto" (Debian from
    the registry, else a debootstrap import), "debootstrap", or an image ref. ``docker_dir``
    points at another folder holding an ``images.yaml`` and the Dockerfile folders. ``envs`` adds
    the images that env YAMLs declare (a user env's, say); with no ``names``, only those (and their
    parents) are built.
    """
    root = Path(docker_dir) if docker_dir is not None else default_docker_dir()
    catalog = load_catalog(root)
    if envs:
        own: list[str] = []
        for env in envs:
            merged = env_images(env, catalog)
            own += [name for name in merged if name not in catalog]
            catalog = merged
        names = names or own
        if not names:
            raise ConfigError(f"the env definition(s) {', '.join(map(str, envs))} declare no images")
    selected = select_images(catalog, names)
    helpers = root / HELPERS_DIR
    api = engine_client()
    sources = SourceResolver(data_root, data_families(selected))
    refs: dict[str, str] = {}
    results: list[BuildResult] = []
    try:
        if any(spec.parent == BASE_PARENT for spec in selected):
            refs[BASE_PARENT] = resolve_base(api, base, log)
        for spec in selected:
            parent_ref = refs.get(spec.parent)
            if parent_ref is None:
                reason = f"its parent {spec.parent!r} was skipped"
                log(f"{spec.name}: skipped ({reason})")
                results.append(BuildResult(spec.name, spec.ref, "skipped", detail=reason))
                continue
            result = _build_one(api, spec, parent_ref, helpers, sources, force, log)
            if result.status != "skipped":
                refs[spec.name] = spec.ref
            results.append(result)
        _remove_superseded(api, results, log)
    except requests.exceptions.ConnectionError as exc:
        raise EngineUnavailable(str(exc)) from None
    finally:
        api.close()
    return results

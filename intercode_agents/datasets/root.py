"""Find the InterCode task data: an explicit path, ``INTERCODE_DATA``, the cache, or a verified download.

The download fetches the pinned files one by one from the InterCode repository (``INTERCODE_DATA_URL``
overrides the base URL, e.g. to serve a local copy). It first fetches the copy's ``SHA256SUMS`` and
checks it against the sha256 the package pins, then checks each file against that list, stages
everything in a temporary folder and only then moves it into the cache. A per-family marker file
records a complete family, so a half-finished download is never mistaken for data. A source without
``SHA256SUMS`` (the upstream repository serves none) cannot be verified: point ``INTERCODE_DATA`` at a
copy, or ``INTERCODE_DATA_URL`` at a mirror that serves the list.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from intercode_agents.datasets.manifest import (
    CHECKSUMS_FILE,
    CHECKSUMS_SHA256,
    DEFAULT_BASE_URL,
    INDEX_FILES,
    INTERCODE_COMMIT,
    check_families,
    family_files,
    parse_checksums,
)
from intercode_agents.errors import DatasetError
from intercode_agents.paths import cache_dir

ENV_DATA = "INTERCODE_DATA"
ENV_URL = "INTERCODE_DATA_URL"
_DOWNLOAD_TIMEOUT_S = 60.0
_DOWNLOAD_WORKERS = 6


def resolve_data_root(path: str | Path | None = None, *, families: Sequence[str] | None = None) -> Path:
    """Return the folder holding the InterCode data (its ``data/`` and ``docker/`` sub-folders).

    Order: 1. ``path``; 2. the ``INTERCODE_DATA`` environment variable; 3. the cache
    (``cache_dir()/intercode-data/<commit>``); 4. a download of the pinned files into that cache.
    ``families`` limits the check (and the download) to some of "bash", "sql", "python", "ctf";
    None means all four. A given folder without the expected files raises :class:`DatasetError`.
    """
    wanted = check_families(list(families) if families is not None else None)
    if path is not None:
        return _checked_root(Path(path), wanted, "the given data path")
    env_path = os.environ.get(ENV_DATA)
    if env_path:
        return _checked_root(Path(env_path), wanted, f"${ENV_DATA}")
    root = cache_dir() / "intercode-data" / INTERCODE_COMMIT
    missing = [f for f in wanted if not _marker(root, f).is_file()]
    if missing:
        _download_families(root, missing)
    return root


def _checked_root(root: Path, families: tuple[str, ...], origin: str) -> Path:
    root = root.expanduser().resolve()
    if not root.is_dir():
        raise DatasetError(f"{origin} {str(root)!r} is not a directory; point it at an InterCode data copy")
    absent = [rel for fam in families for rel in INDEX_FILES[fam] if not (root / rel).is_file()]
    if absent:
        shown = ", ".join(absent[:3]) + (f" and {len(absent) - 3} more" if len(absent) > 3 else "")
        raise DatasetError(
            f"{origin} {str(root)!r} lacks the InterCode task files {shown}. Expected the layout of the "
            f"InterCode repository at commit {INTERCODE_COMMIT[:12]} (data/nl2bash, data/sql, data/python, "
            f"data/ctf); unset {ENV_DATA} to use the cached download instead."
        )
    return root


def _marker(root: Path, family: str) -> Path:
    return root / f".complete-{family}"


@contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _download_families(root: Path, families: list[str]) -> None:
    base = os.environ.get(ENV_URL) or DEFAULT_BASE_URL
    with _locked(root.parent / f"{root.name}.lock"):
        checksums: dict[str, str] | None = None
        for family in families:
            if _marker(root, family).is_file():  # another process finished it while we waited
                continue
            checksums = checksums or _fetch_checksums(base, root.parent)
            files = family_files(family, checksums)
            staging = Path(tempfile.mkdtemp(prefix=f".{family}-", dir=root.parent))
            try:
                with ThreadPoolExecutor(_DOWNLOAD_WORKERS) as pool:
                    jobs = [pool.submit(_fetch, base, rel, digest, staging) for rel, digest in files.items()]
                    for job in jobs:
                        job.result()
                for rel in files:
                    target = root / rel
                    target.parent.mkdir(parents=True, exist_ok=True)
                    os.replace(staging / rel, target)
                _marker(root, family).write_text(f"{INTERCODE_COMMIT}\n", encoding="utf-8")
            finally:
                shutil.rmtree(staging, ignore_errors=True)


def _fetch_checksums(base: str, scratch: Path) -> dict[str, str]:
    """The data copy's checksum list, fetched from ``base`` and checked against the pinned sha256."""
    staging = Path(tempfile.mkdtemp(prefix=".checksums-", dir=scratch))
    try:
        _fetch(base, CHECKSUMS_FILE, CHECKSUMS_SHA256, staging)
        return parse_checksums((staging / CHECKSUMS_FILE).read_text(encoding="utf-8"))
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _fetch(base: str, rel: str, expected: str, staging: Path) -> None:
    url = f"{base.rstrip('/')}/{urllib.parse.quote(rel)}"
    target = staging / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    try:
        with urllib.request.urlopen(url, timeout=_DOWNLOAD_TIMEOUT_S) as response, open(target, "wb") as out:
            while chunk := response.read(1 << 16):
                digest.update(chunk)
                out.write(chunk)
    except (urllib.error.URLError, OSError) as exc:
        raise DatasetError(
            f"could not download InterCode file {rel} from {url}: {exc}. Check the network, or set "
            f"{ENV_DATA} to a local copy of the data (or {ENV_URL} to a mirror)."
        ) from exc
    if digest.hexdigest() != expected:
        raise DatasetError(
            f"checksum mismatch for InterCode file {rel} (from {url}): expected sha256 {expected}, "
            f"got {digest.hexdigest()}. The source does not serve the pinned commit {INTERCODE_COMMIT[:12]}."
        )

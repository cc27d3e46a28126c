"""The Debian base every image starts from: a registry image, or a debootstrap import offline."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable

from intercode_agents.errors import ConfigError, ImageBuildError
from intercode_agents.sandbox.image_store import ImageStore, ImageStoreError

DEBIAN_BASE = "debian:bookworm-slim"
BOOTSTRAP_BASE = "intercode-agents/base:bookworm"
BOOTSTRAP_SUITE = "bookworm"
PULL_TIMEOUT_S = 20


def image_exists(store: ImageStore, ref: str) -> bool:
    return store.inspect(ref) is not None


def try_pull(store: ImageStore, ref: str, log: Callable[[str], None]) -> bool:
    """Pull ``ref`` with a short deadline (per read); False when the registry cannot be reached."""
    problem = store.pull(ref, PULL_TIMEOUT_S)
    if problem is not None:
        log(f"the registry is unreachable for {ref} ({problem[:300]})")
        return False
    log(f"pulled {ref}")
    return True


def _run_logged(cmd: list[str], log: Callable[[str], None], tail: list[str]) -> None:
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        tail.append(line.rstrip())
        del tail[:-40]
        log(f"  {line.rstrip()}")
    if proc.wait() != 0:
        raise ImageBuildError("base", f"`{' '.join(cmd)}` exited with status {proc.returncode}", tail)


def debootstrap_base(store: ImageStore, log: Callable[[str], None], ref: str = BOOTSTRAP_BASE) -> str:
    """Make ``ref`` (a minbase Debian bookworm) with debootstrap unless it exists already."""
    if image_exists(store, ref):
        log(f"base image {ref}: present")
        return ref
    if shutil.which("debootstrap") is None:
        raise ImageBuildError(
            "base",
            "no base image is available and debootstrap is missing: install it with "
            "`apt-get install debootstrap` (Debian/Ubuntu), or make debian:bookworm-slim available",
        )
    if os.geteuid() != 0:
        raise ImageBuildError("base", "debootstrap needs root: run the image build as root (e.g. with sudo)")
    log(f"building {ref} with debootstrap --variant=minbase {BOOTSTRAP_SUITE} (about a minute)")
    tail: list[str] = []
    root = tempfile.mkdtemp(prefix="intercode-debootstrap-")
    try:
        _run_logged(["debootstrap", "--variant=minbase", BOOTSTRAP_SUITE, root], log, tail)
        tar = subprocess.Popen(["tar", "-C", root, "-c", "."], stdout=subprocess.PIPE)
        assert tar.stdout is not None
        try:
            store.import_tar(tar.stdout, ref, ['CMD ["/bin/bash"]'])
        except ImageStoreError as exc:
            raise ImageBuildError("base", f"the engine refused the import: {exc}", tail) from None
        finally:
            tar.stdout.close()
            if tar.wait() != 0:
                raise ImageBuildError("base", f"tar of {root} exited with status {tar.returncode}", tail)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    log(f"imported {ref}")
    return ref


def resolve_base(store: ImageStore, base: str, log: Callable[[str], None]) -> str:
    """The base image ref for ``base`` ("auto", "debootstrap" or an image ref), made available locally."""
    if not isinstance(base, str) or not base:
        raise ConfigError(f"base must be 'auto', 'debootstrap' or an image ref, got {base!r}")
    if base == "debootstrap":
        return debootstrap_base(store, log)
    if base == "auto":
        if image_exists(store, DEBIAN_BASE) or try_pull(store, DEBIAN_BASE, log):
            return DEBIAN_BASE
        log("falling back to a debootstrap base image")
        return debootstrap_base(store, log)
    if not image_exists(store, base) and not try_pull(store, base, log):
        raise ConfigError(f"base image {base!r} is not present locally and cannot be pulled")
    return base

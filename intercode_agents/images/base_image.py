"""The Debian base every image starts from: a registry image, or a debootstrap import offline."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable

import docker.errors
import requests

from intercode_agents.errors import ConfigError, ImageBuildError

DEBIAN_BASE = "debian:bookworm-slim"
BOOTSTRAP_BASE = "intercode-agents/base:bookworm"
BOOTSTRAP_SUITE = "bookworm"
PULL_TIMEOUT_S = 20


def image_exists(api: docker.APIClient, ref: str) -> bool:
    try:
        api.inspect_image(ref)
    except docker.errors.ImageNotFound:
        return False
    return True


def try_pull(ref: str, log: Callable[[str], None]) -> bool:
    """Pull ``ref`` with a short deadline (per read); False when the registry cannot be reached."""
    api = docker.from_env(timeout=PULL_TIMEOUT_S).api
    try:
        for chunk in api.pull(ref, stream=True, decode=True):
            if "error" in chunk:
                raise docker.errors.APIError(chunk["error"])
    except (docker.errors.APIError, requests.exceptions.RequestException) as exc:
        reason = getattr(exc, "explanation", None) or str(exc) or type(exc).__name__
        log(f"the registry is unreachable for {ref} ({reason.strip()[:300]})")
        return False
    finally:
        api.close()
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


def debootstrap_base(api: docker.APIClient, log: Callable[[str], None], ref: str = BOOTSTRAP_BASE) -> str:
    """Make ``ref`` (a minbase Debian bookworm) with debootstrap unless it exists already."""
    if image_exists(api, ref):
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
        repo, _, tag = ref.rpartition(":")
        try:
            api.import_image_from_stream(tar.stdout, repository=repo, tag=tag, changes=['CMD ["/bin/bash"]'])
        finally:
            tar.stdout.close()
            if tar.wait() != 0:
                raise ImageBuildError("base", f"tar of {root} exited with status {tar.returncode}", tail)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    log(f"imported {ref}")
    return ref


def resolve_base(api: docker.APIClient, base: str, log: Callable[[str], None]) -> str:
    """The base image ref for ``base`` ("auto", "debootstrap" or an image ref), made available locally."""
    if not isinstance(base, str) or not base:
        raise ConfigError(f"base must be 'auto', 'debootstrap' or an image ref, got {base!r}")
    if base == "debootstrap":
        return debootstrap_base(api, log)
    if base == "auto":
        if image_exists(api, DEBIAN_BASE) or try_pull(DEBIAN_BASE, log):
            return DEBIAN_BASE
        log("falling back to a debootstrap base image")
        return debootstrap_base(api, log)
    if not image_exists(api, base) and not try_pull(base, log):
        raise ConfigError(f"base image {base!r} is not present locally and cannot be pulled")
    return base

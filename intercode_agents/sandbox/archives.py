"""Tar archives, the form in which files travel in and out of a sandbox through a backend.

The backend contract moves whole archives (``put_archive``, ``get_archive``); the sandbox's file calls
(:meth:`~intercode_agents.sandbox.Sandbox.write_file`, ``copy_in``, ``read_file``) pack and unpack
them here.
"""

from __future__ import annotations

import io
import tarfile
import time
from collections.abc import Sequence
from pathlib import Path

from intercode_agents.errors import IntercodeError


def one_file(name: str, data: bytes, mode: int) -> bytes:
    """An archive holding one file, ``name``, with ``data`` and permission bits ``mode``."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo(name)
        info.size, info.mode, info.mtime = len(data), mode, int(time.time())
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def host_files(sources: Sequence[tuple[Path, str]]) -> bytes:
    """An archive of host files; each source is (host path, its name in the archive)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for host_path, arcname in sources:
            tar.add(str(host_path), arcname=arcname, recursive=False)
    return buf.getvalue()


def regular_file(archive: bytes, path: str, max_bytes: int) -> bytes:
    """The content of the regular file ``archive`` holds (``path`` names it in errors)."""
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        member = next((m for m in tar.getmembers() if m.isfile()), None)
        if member is None:
            raise IsADirectoryError(f"not a regular file in the sandbox: {path}")
        if member.size > max_bytes:
            raise IntercodeError(f"{path} is {member.size} bytes, over the {max_bytes}-byte read limit")
        fh = tar.extractfile(member)
        assert fh is not None
        return fh.read()

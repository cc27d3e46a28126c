"""A running container's files, read from the engine's host without running anything in the container.

Scoring must not trust the sandbox it scores: an agent is root in its container and may replace
``md5sum`` or ``find``, or leave a process that answers for them. On a local engine, as root, the
container's whole file system (its overlay root, its tmpfs mounts, the files Docker bind-mounts) is
readable from this host through ``/proc/<pid>/root`` of its init process. :class:`ContainerFiles`
holds a descriptor of that root, taken when the container starts (so that a PID reused later can
never point it elsewhere), and resolves every path itself, component by component, relative to that
descriptor and never following a symlink in the kernel: a symlink inside the container is resolved
the way the container would, within its root, so no path ever leads onto the host.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass

_MAX_HOPS = 40  # symlinks followed while resolving one path (the kernel's limit)
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC  # (a FIFO never blocks the open)


class Unreadable(Exception):
    """The container's files cannot be read from this host (no such process, no privilege)."""


@dataclass(frozen=True)
class Mount:
    point: str  # inside the container
    fstype: str
    writable: bool


class ContainerFiles:
    def __init__(self, root_fd: int, mounts: tuple[Mount, ...]) -> None:
        self._root = root_fd
        self.mounts = mounts

    @classmethod
    def of_process(cls, pid: int) -> ContainerFiles:
        """The files of the container whose init has host PID ``pid``."""
        try:
            root = os.open(f"/proc/{pid}/root", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            with open(f"/proc/{pid}/mountinfo", encoding="utf-8", errors="surrogateescape") as fh:
                mounts = tuple(parse_mountinfo(fh.read()))
        except OSError as exc:
            raise Unreadable(f"cannot read /proc/{pid}: {exc}") from exc
        return cls(root, mounts)

    def close(self) -> None:
        if self._root >= 0:
            os.close(self._root)
            self._root = -1

    # -- resolving ---------------------------------------------------------------------------
    def _parts(self, path: str, *, follow_last: bool = False) -> list[str] | None:
        """``path``'s components with every symlink before the last (and the last too, if asked)
        resolved inside the container; None when a component is missing or not a folder."""
        todo = [p for p in path.split("/") if p]
        done: list[str] = []
        hops = 0
        while todo:
            name = todo.pop(0)
            if name == ".":
                continue
            if name == "..":
                if done:
                    done.pop()
                continue
            st = self._lstat_in(done, name)
            if st is None:
                return None
            if stat.S_ISLNK(st.st_mode) and (todo or follow_last):
                hops += 1
                if hops > _MAX_HOPS:
                    return None
                target = self._readlink_in(done, name)
                if target is None:
                    return None
                if target.startswith("/"):
                    done = []
                todo = [p for p in target.split("/") if p] + todo
                continue
            if todo and not stat.S_ISDIR(st.st_mode):
                return None
            done.append(name)
        return done

    def _open_dir(self, parts: list[str]) -> int | None:
        fd = os.dup(self._root)
        try:
            for name in parts:
                nxt = os.open(name, _DIR, dir_fd=fd)
                os.close(fd)
                fd = nxt
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.EACCES):
                return None
            raise
        return fd

    def _lstat_in(self, parts: list[str], name: str) -> os.stat_result | None:
        fd = self._open_dir(parts)
        if fd is None:
            return None
        try:
            return os.stat(name, dir_fd=fd, follow_symlinks=False)
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.ENOTDIR):
                return None
            raise
        finally:
            os.close(fd)

    def _readlink_in(self, parts: list[str], name: str) -> str | None:
        fd = self._open_dir(parts)
        if fd is None:
            return None
        try:
            return os.readlink(name, dir_fd=fd)
        except OSError:
            return None
        finally:
            os.close(fd)

    # -- reading -----------------------------------------------------------------------------
    def lstat(self, path: str) -> os.stat_result | None:
        """The container's ``lstat(path)`` (None: missing)."""
        parts = self._parts(path)
        if parts is None:
            return None
        if not parts:
            return os.fstat(self._root)
        return self._lstat_in(parts[:-1], parts[-1])

    def stat(self, path: str) -> os.stat_result | None:
        """The container's ``stat(path)``: links followed, inside the container (None: missing)."""
        parts = self._parts(path, follow_last=True)
        if parts is None:
            return None
        if not parts:
            return os.fstat(self._root)
        return self._lstat_in(parts[:-1], parts[-1])

    def readlink(self, path: str) -> str | None:
        parts = self._parts(path)
        return None if not parts else self._readlink_in(parts[:-1], parts[-1])

    def md5(self, path: str, *, follow: bool = False) -> str | None:
        """The md5 of a regular file's content (None: missing, or not a regular file); ``follow``
        reads what a link at ``path`` leads to."""
        parts = self._parts(path, follow_last=follow)
        if not parts:
            return None
        fd = self._open_dir(parts[:-1])
        if fd is None:
            return None
        try:
            file_fd = os.open(
                parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd
            )
        except OSError:
            return None
        finally:
            os.close(fd)
        with os.fdopen(file_fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(file_fd).st_mode):
                return None
            return hashlib.file_digest(fh, "md5").hexdigest()

    def walk(self, path: str, *, one_file_system: bool = False) -> Iterator[tuple[str, os.stat_result]]:
        """Every entry below the folder ``path`` as (path relative to it, lstat), never following a
        symlink; ``one_file_system`` stays on the folder's own mount (like ``find -xdev``)."""
        parts = self._parts(path)
        if parts is None:
            return
        top = self._open_dir(parts)
        if top is None:
            return
        device = os.fstat(top).st_dev
        stack: list[tuple[int, str]] = [(top, "")]
        while stack:
            fd, rel = stack.pop()
            try:
                names = sorted(os.listdir(fd))
                for name in names:
                    try:
                        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                    except OSError:
                        continue
                    child = f"{rel}/{name}" if rel else name
                    yield child, st
                    if stat.S_ISDIR(st.st_mode) and not (one_file_system and st.st_dev != device):
                        try:
                            stack.append((os.open(name, _DIR, dir_fd=fd), child))
                        except OSError:
                            continue
            finally:
                os.close(fd)


def parse_mountinfo(text: str) -> Iterator[Mount]:
    for line in text.splitlines():
        left, _, right = line.partition(" - ")
        fields = left.split()
        if len(fields) < 6 or not right:
            continue
        point = fields[4].replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n")
        point = point.replace("\\134", "\\")
        yield Mount(point, right.split()[0], fields[5].split(",")[0] == "rw")

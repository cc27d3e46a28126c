"""Changes in a sandbox's other writable mounts: its tmpfs folders and the files Docker bind-mounts.

Docker's change list (and the overlay upper directory) covers the container's root file system only.
A process can also write to ``/dev/shm``, ``/dev`` and ``/sys/fs/cgroup`` (tmpfs), ``/dev/mqueue``
(POSIX message queues) and ``/etc/hostname``, ``/etc/hosts``, ``/etc/resolv.conf`` (bind mounts),
and to any tmpfs or volume a user adds. :meth:`Sandbox.diff` reports those too, against their state
when the sandbox started, with Docker's rules: a path that is new is "A", one that is gone "D", one
whose type, mode, owner, size, modification time or content differs "C" (a folder: type, mode and
owner only), and a folder with a change below it "C". Pseudo-terminals (``/dev/pts``) are process
state, not files, and are left out.

Read from this host through :class:`~intercode_agents.sandbox.container_fs.ContainerFiles` where it
can; else :data:`MOUNTS_SCRIPT` lists the same from inside the sandbox.
"""

from __future__ import annotations

import hashlib
import stat
from collections.abc import Iterable

from intercode_agents.sandbox.container_fs import ContainerFiles, Mount
from intercode_agents.sandbox.contract import Change, ChangeKind

Entries = dict[str, tuple[str, ...]]  # container path -> (type, mode, uid, gid, size, mtime, payload)
_SKIPPED_TYPES = frozenset({"proc", "sysfs", "cgroup", "cgroup2", "devpts", "overlay"})


def writable_points(mounts: Iterable[Mount]) -> list[str]:
    """The mount points whose content is a sandbox's own state, outermost first."""
    return sorted(
        {
            m.point
            for m in mounts
            if m.writable
            and m.fstype not in _SKIPPED_TYPES
            and m.point != "/"
            and not m.point.startswith("/proc")
        }
    )


def _time(ns: int) -> str:
    return f"{ns // 1_000_000_000}.{ns % 1_000_000_000:09d}0"  # as find's %T@ prints it


def _entry(kind: str, st: object, payload: str) -> tuple[str, ...]:
    mode = getattr(st, "st_mode", 0)
    return (
        kind, oct(stat.S_IMODE(mode)), str(getattr(st, "st_uid", "")), str(getattr(st, "st_gid", "")),
        str(getattr(st, "st_size", "")), _time(getattr(st, "st_mtime_ns", 0)), payload,
    )  # fmt: skip


def _kind(mode: int) -> str:
    return {stat.S_IFREG: "f", stat.S_IFDIR: "d", stat.S_IFLNK: "l"}.get(stat.S_IFMT(mode), "o")


def read_entries(files: ContainerFiles, points: list[str]) -> Entries:
    """Every entry of the mounts at ``points`` (each on its own file system), read from this host."""
    found: Entries = {}
    for point in points:
        top = files.lstat(point)
        if top is None:
            continue
        found[point] = _entry(_kind(top.st_mode), top, _payload(files, point, top.st_mode))
        if not stat.S_ISDIR(top.st_mode):
            continue
        for rel, st in files.walk(point, one_file_system=True):
            path = f"{point.rstrip('/')}/{rel}"
            if path in points:
                continue  # another mount, listed on its own
            found[path] = _entry(_kind(st.st_mode), st, _payload(files, path, st.st_mode))
    return found


def _payload(files: ContainerFiles, path: str, mode: int) -> str:
    if stat.S_ISREG(mode):
        return files.md5(path) or ""
    if stat.S_ISLNK(mode):
        return files.readlink(path) or ""
    return ""


# The same listing from inside the sandbox (bash); arguments: the mount points. One record per entry,
# NUL-terminated: path TAB type TAB mode TAB uid TAB gid TAB size TAB mtime TAB link TAB md5.
MOUNTS_SCRIPT = r"""
export LC_ALL=C
for point in "$@"; do
  find "$point" -xdev -printf '%y\0%p\0%m\t%U\t%G\t%s\t%T@\t%l\0' 2>/dev/null |
  while IFS= read -r -d '' kind && IFS= read -r -d '' path && IFS= read -r -d '' rest; do
    md5=""
    if [ "$kind" = f ]; then md5=$(md5sum < "$path" 2>/dev/null); md5=${md5%% *}; fi
    printf '%s\t%s\t%s\t%s\0' "$path" "$kind" "$rest" "$md5"
  done
done
exit 0
"""


def parse_entries(output: str) -> Entries:
    """Parse :data:`MOUNTS_SCRIPT`'s output into the entries :func:`read_entries` gives."""
    found: Entries = {}
    for record in output.split("\0"):
        fields = record.split("\t")
        if len(fields) != 9:
            continue
        path, kind, mode, uid, gid, size, mtime, link, md5 = fields
        kind = kind if kind in ("f", "d", "l") else "o"
        payload = md5 if kind == "f" else link if kind == "l" else ""
        found[path] = (kind, oct(int(mode, 8)), uid, gid, size, mtime, payload)
    return found


def changes(fresh: Entries, now: Entries) -> list[Change]:
    """Every entry added, deleted or changed since ``fresh``, parents included."""
    out: dict[str, ChangeKind] = {}
    for path in now.keys() - fresh.keys():
        out[path] = "A"
    for path in fresh.keys() - now.keys():
        out[path] = "D"
    for path in now.keys() & fresh.keys():
        old, new = fresh[path], now[path]
        same = old[:4] == new[:4] if old[0] == new[0] == "d" else old == new
        if not same:
            out[path] = "C"
    for path in list(out):
        parent = path.rsplit("/", 1)[0]
        while parent:
            out.setdefault(parent, "C")
            parent = parent.rsplit("/", 1)[0]
    return sorted(Change(path, kind) for path, kind in out.items())


def digest(entries: Entries) -> str:
    """A short digest of a listing (for logs and tests)."""
    return hashlib.sha256(repr(sorted(entries.items())).encode()).hexdigest()[:16]

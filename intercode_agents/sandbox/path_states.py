"""What a set of paths holds inside a sandbox: kind, content digest, mode and owner.

Two ways to the same answer. Where this host can read the container's files
(:class:`~intercode_agents.sandbox.container_fs.ContainerFiles`), nothing runs in the sandbox: scoring
never depends on tools an agent could have replaced. Elsewhere (a remote engine) :data:`PROBE_SCRIPT`
runs in the sandbox (bash, coreutils, findutils) and only reads; the conformance suite's
``test_path_states.py`` checks that both give the same states.

A path's state (:class:`PathState`):

- ``kind``: "file", "dir", "link", "other" (a device, a FIFO, a socket) or "missing";
- ``md5``: a file's content; a link's target text (with a newline, as ``readlink | md5sum`` gives);
  for a folder read ``deep``, one md5 over its files (``MD5  ./relative/path`` records sorted by path)
  and its links (``./path -> target`` records, sorted); None otherwise;
- ``files``: the files and links below a deep folder (1 for a file or a link);
- ``mode`` (permission bits, with setuid, setgid and sticky; None for a link), ``uid``, ``gid``, and
  ``mtime`` (nanoseconds);
- ``followed`` (links only): what the link leads to, as ``md5sum`` sees it: ``"file <md5>"``,
  ``"dir"``, ``"other"`` or ``"missing"``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import os
import posixpath
import stat
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple, TypedDict, cast

from intercode_agents.sandbox.container_fs import ContainerFiles

Kind = Literal["file", "dir", "link", "other", "missing"]
_KINDS: frozenset[str] = frozenset({"file", "dir", "link", "other", "missing"})


@dataclass(frozen=True)
class PathState:
    """What one path holds in a sandbox (the module docstring says what each field means). Scoring
    compares these between sandboxes (the Bash reward: :mod:`intercode_agents.envs.bash.changes`),
    the guards between moments of one sandbox; no comparison across sandboxes looks at ``mtime``
    except against the pristine image's (touched or not)."""

    kind: Kind
    md5: str | None = None
    files: int = 0
    mode: int | None = None
    uid: int | None = None
    gid: int | None = None
    mtime: int | None = None
    followed: str | None = None


MISSING = PathState("missing")


class _Owner(TypedDict, total=False):
    """The ownership fields of a :class:`PathState` (none when the probe could not read them)."""

    mode: int | None
    uid: int | None
    gid: int | None
    mtime: int | None


def _owner(st: os.stat_result) -> _Owner:
    perm = None if stat.S_ISLNK(st.st_mode) else stat.S_IMODE(st.st_mode)
    return {"mode": perm, "uid": st.st_uid, "gid": st.st_gid, "mtime": st.st_mtime_ns}


def read_states(files: ContainerFiles, deep: Sequence[str], shallow: Sequence[str]) -> dict[str, PathState]:
    """The states of ``deep`` and ``shallow`` paths, read from this host."""
    found: dict[str, PathState] = {}
    for path, is_deep in [*((p, True) for p in deep), *((p, False) for p in shallow)]:
        found[path] = _state(files, path, is_deep)
    return found


class Content(NamedTuple):
    """What an entry holds, to tell whether it still is what it was: its kind, and the md5 of its
    content (a file's bytes; a link's target text with a newline, as in :class:`PathState`; None for
    the other kinds)."""

    kind: Kind
    md5: str | None = None


def _link_md5(target: str) -> str:
    return hashlib.md5(target.encode("utf-8", errors="surrogateescape") + b"\n").hexdigest()


def read_contents(files: ContainerFiles, directory: str, max_bytes: int) -> dict[str, Content] | None:
    """The :class:`Content` of every entry below the folder ``directory``, read from this host; empty
    when it is no folder, None when its files hold more than ``max_bytes``."""
    base = directory.rstrip("/")
    found: dict[str, Content] = {}
    size = 0
    for rel, st in files.walk(directory):
        path = f"{base}/{rel}"
        if stat.S_ISREG(st.st_mode):
            size += st.st_size
            if size > max_bytes:
                return None
            found[path] = Content("file", files.md5(path))
        elif stat.S_ISLNK(st.st_mode):
            found[path] = Content("link", _link_md5(files.readlink(path) or ""))
        else:
            found[path] = Content("dir" if stat.S_ISDIR(st.st_mode) else "other")
    return found


def archive_contents(tar_bytes: bytes, directory: str) -> dict[str, Content]:
    """The same from the engine's archive of ``directory`` (its entries are named from the folder's
    own name, as ``docker cp`` gives them)."""
    base = directory.rstrip("/")
    parent = posixpath.dirname(base) or "/"
    found: dict[str, Content] = {}
    digests: dict[str, str] = {}  # member name -> md5, for the hard links that name it
    with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as tar:
        for member in tar:
            path = posixpath.normpath(posixpath.join(parent, member.name))
            if member.isreg():
                handle = tar.extractfile(member)
                # a regular member's reader is an ExFileObject, a BufferedReader (typed IO[bytes] only)
                assert isinstance(handle, io.BufferedReader)
                digests[member.name] = hashlib.file_digest(handle, "md5").hexdigest()
                content = Content("file", digests[member.name])
            elif member.islnk():
                content = Content("file", digests.get(member.linkname))
            elif member.issym():
                content = Content("link", _link_md5(member.linkname))
            else:
                content = Content("dir" if member.isdir() else "other")
            if path.startswith(base + "/"):
                found[path] = content
    return found


def _state(files: ContainerFiles, path: str, deep: bool) -> PathState:
    st = files.lstat(path)
    if st is None:
        return MISSING
    owner = _owner(st)
    if stat.S_ISLNK(st.st_mode):
        target = files.readlink(path) or ""
        return PathState("link", _link_md5(target), 1, **owner, followed=_followed(files, path))
    if stat.S_ISREG(st.st_mode):
        return PathState("file", files.md5(path), 1, **owner)
    if not stat.S_ISDIR(st.st_mode):
        return PathState("other", None, 0, **owner)
    if not deep:
        return PathState("dir", None, 0, **owner)
    records: list[bytes] = []
    links: list[bytes] = []
    for rel, child in files.walk(path):
        name = f"./{rel}".encode("utf-8", errors="surrogateescape")
        if stat.S_ISREG(child.st_mode):
            md5 = files.md5(f"{path.rstrip('/')}/{rel}")
            if md5 is not None:
                records.append(md5.encode() + b"  " + name + b"\0")
        elif stat.S_ISLNK(child.st_mode):
            target = files.readlink(f"{path.rstrip('/')}/{rel}") or ""
            links.append(name + b" -> " + target.encode("utf-8", errors="surrogateescape") + b"\0")
    records.sort(key=lambda r: r.split(b"  ", 1)[1])
    links.sort()
    tree = hashlib.md5(b"".join(records) + b"".join(links)).hexdigest()
    return PathState("dir", tree, len(records) + len(links), **owner)


def _followed(files: ContainerFiles, path: str) -> str:
    """What a link leads to, as ``md5sum`` (which follows links) sees it."""
    st = files.stat(path)
    if st is None:
        return "missing"
    if stat.S_ISDIR(st.st_mode):
        return "dir"
    if stat.S_ISREG(st.st_mode):
        md5 = files.md5(path, follow=True)
        return f"file {md5}" if md5 is not None else "other"
    return "other"


_SHALLOW_MARK = "--shallow"  # paths are absolute, so this argument cannot be a path

# One NUL-terminated record per path: kind TAB md5 TAB files TAB mode:uid:gid:mtime TAB followed TAB path.
PROBE_SCRIPT = r"""
export LC_ALL=C
deep=1
files=()
owner() { stat -c '%f:%u:%g:%.9Y' -- "$1" 2>/dev/null || printf '0:-:-:-'; }
for p in "$@"; do
  if [ "$p" = "--shallow" ]; then deep=0; continue; fi
  if [ -L "$p" ]; then
    h=$(readlink -- "$p" | md5sum)
    if [ -f "$p" ]; then t=$(md5sum < "$p" 2>/dev/null) && t="file ${t%% *}" || t=other
    elif [ -d "$p" ]; then t=dir; elif [ -e "$p" ]; then t=other; else t=missing; fi
    printf 'link\t%s\t1\t%s\t%s\t%s\0' "${h%% *}" "$(owner "$p")" "$t" "$p"
  elif [ -f "$p" ]; then
    files+=("$p")
  elif [ -d "$p" ] && [ "$deep" = 1 ]; then
    n=$(find "$p" \( -type f -o -type l \) -printf x 2>/dev/null | wc -c)
    h=$( (cd -- "$p" && find . -type f -print0 | sort -z | xargs -0 -r md5sum -z --;
          find . -type l -printf '%p -> %l\0' | sort -z) 2>/dev/null | md5sum)
    printf 'dir\t%s\t%s\t%s\t-\t%s\0' "${h%% *}" "$n" "$(owner "$p")" "$p"
  elif [ -d "$p" ]; then
    printf 'dir\t-\t0\t%s\t-\t%s\0' "$(owner "$p")" "$p"
  elif [ -e "$p" ]; then
    printf 'other\t-\t0\t%s\t-\t%s\0' "$(owner "$p")" "$p"
  else
    printf 'missing\t-\t0\t-\t-\t%s\0' "$p"
  fi
done
for p in "${files[@]}"; do
  h=$(md5sum -- "$p" 2>/dev/null) || continue
  printf 'file\t%s\t1\t%s\t-\t%s\0' "${h%% *}" "$(owner "$p")" "$p"
done
exit 0
"""


def _parse_owner(kind: str, owner: str) -> _Owner:
    if owner == "-":
        return {}
    raw, uid, gid, mtime = owner.split(":")
    seconds, _, fraction = mtime.partition(".")
    return {
        "mode": None if kind == "link" else stat.S_IMODE(int(raw, 16)),
        "uid": int(uid) if uid.isdigit() else None,
        "gid": int(gid) if gid.isdigit() else None,
        "mtime": int(seconds) * 1_000_000_000 + int(fraction.ljust(9, "0")) if seconds.isdigit() else None,
    }


def probe_command(deep: Sequence[str], shallow: Sequence[str]) -> list[str]:
    """The argv that prints the states of the paths from inside the sandbox (the slow path)."""
    return ["bash", "-c", PROBE_SCRIPT, "intercode-probe", *deep, _SHALLOW_MARK, *shallow]


def parse_probe_output(output: str) -> dict[str, PathState]:
    """Parse :data:`PROBE_SCRIPT`'s output (an unreadable file is simply absent)."""
    found: dict[str, PathState] = {}
    for record in output.split("\0"):
        if not record:
            continue
        fields = record.split("\t", 5)
        if len(fields) != 6 or fields[0] not in _KINDS or not fields[2].isdigit():
            raise ValueError(f"unexpected probe record {record[:200]!r}")
        kind, md5, count, owner, followed, path = fields
        md5_or_none = None if md5 == "-" else md5
        state = PathState(cast(Kind, kind), md5_or_none, int(count), **_parse_owner(kind, owner))
        found[path] = dataclasses.replace(state, followed=None if followed == "-" else followed)
    return found

"""File-system changes of a Bash episode, as the reward sees them.

The env reads each container's changes from Docker's container-changes API (``GET /containers/{id}/changes``,
``docker diff``): every changed path with kind 0 = changed ("C"), 1 = added ("A"), 2 = deleted ("D"),
parent folders of a change included (they show as "C"), a deleted folder as one "D" entry.

The original InterCode diffed the container with ``git status --short`` in a repository at ``/`` whose
``.gitignore`` (its ``docker.gitignore``) skipped the usual system folders. :func:`change_entries`
rebuilds that view in ``intercode`` mode: only paths outside the ignored names, folders collapsed
the way git shows untracked ones (``?? dir/``), changed folders dropped (git tracks files only),
changed files as ``M``, deleted paths as ``D``. In ``strict`` mode every path counts (apart from a
little noise such as shell history files), each added path is its own entry, and only changed
folders are dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from intercode_agents.errors import ConfigError
from intercode_agents.reward import RewardMode, check_mode

ChangeKind = Literal["A", "C", "D"]
DigestKind = Literal["file", "dir", "link", "other", "missing"]

_DOCKER_KINDS: dict[int, ChangeKind] = {0: "C", 1: "A", 2: "D"}

# Names the original's docker.gitignore excluded; a gitignore pattern without a slash matches at any depth.
INTERCODE_IGNORED_NAMES = frozenset(
    {
        "bin", "boot", "dev", "etc", "home", "lib", "media", "opt", "proc", "root", "run", "sbin", "srv",
        "sys", "usr", "var", ".dockerenv",
    }
)  # fmt: skip
# Strict mode sees every change of the sandbox's files since it started (the env's change list covers
# its tmpfs folders and bind-mounted files too, /dev/shm and /etc/hostname among them) except kernel
# views, pseudo-terminals (process state), the init binary Docker mounts for `--init`, and
# interactive-tool state.
STRICT_IGNORED_PREFIXES = ("/proc/", "/dev/pts/")
STRICT_IGNORED_PATHS = frozenset(
    {
        "/proc", "/dev/pts", "/usr/sbin/docker-init", "/sbin/docker-init", "/root/.bash_history",
        "/root/.python_history", "/root/.lesshst", "/root/.viminfo", "/root/.wget-hsts",
    }
)  # fmt: skip


@dataclass(frozen=True)
class FsChange:
    """One entry of Docker's container changes: an absolute path and "A", "C" or "D"."""

    path: str
    kind: ChangeKind

    @classmethod
    def from_docker(cls, item: Mapping[str, Any]) -> FsChange:
        """From an item of the Engine API's changes list (``{"Path": "/x", "Kind": 0}``)."""
        kind = item.get("Kind")
        path = item.get("Path")
        if not isinstance(path, str) or not path.startswith("/") or kind not in _DOCKER_KINDS:
            raise ConfigError(f"not a Docker container change: {dict(item)!r}")
        return cls(path, _DOCKER_KINDS[kind])


def changes_from_docker(items: Iterable[Mapping[str, Any]] | None) -> tuple[FsChange, ...]:
    """Convert the Engine API's answer (None when nothing changed) into :class:`FsChange` entries."""
    return tuple(FsChange.from_docker(item) for item in items or ())


@dataclass(frozen=True)
class PathDigest:
    """What a path holds in one container (the env reads it with ``Sandbox.path_states``).

    ``md5``: a file's content; a link's target text; for a folder, one md5 over the sorted
    (relative path, md5) pairs of every file and link below it. ``files`` counts the files and links
    below a folder (1 for a file or link). Missing paths have kind "missing" and no md5. ``mode``
    (permission bits; None for a link), ``uid``, ``gid`` and ``mtime`` (nanoseconds) are the path's
    own; no reward compares times across containers, only with the pristine image's (touched or not).
    ``followed`` (links only, not part of equality): what the link leads to, as ``md5sum`` sees it
    (``"file <md5>"``, ``"dir"``, ``"other"`` or ``"missing"``); the intercode content check uses it.
    """

    kind: DigestKind
    md5: str | None = None
    files: int = 0
    mode: int | None = None
    uid: int | None = None
    gid: int | None = None
    mtime: int | None = None
    followed: str | None = field(default=None, compare=False)

    def seen_by(self, mode: RewardMode) -> tuple[Any, ...]:
        """What a reward mode compares: ``strict`` all of it; ``intercode`` what git tracks (the
        content, and for a file its owner's execute bit: the original's ``git status`` shows a mode
        change to or from executable as modified, and no other)."""
        if mode == "strict":
            return (self.kind, self.md5, self.files, self.mode, self.uid, self.gid)
        executable = bool(self.mode & 0o100) if self.kind == "file" and self.mode is not None else None
        return (self.kind, self.md5, self.files, executable)


def same(a: PathDigest | None, b: PathDigest | None, mode: RewardMode) -> bool:
    """Whether two digests are equal as ``mode`` sees them (both absent counts as equal)."""
    if a is None or b is None:
        return a is b
    return a.seen_by(mode) == b.seen_by(mode)


def md5sum_view(digest: PathDigest | None) -> str:
    """What ``md5sum PATH`` told of this path, the path's name aside: it follows links."""
    if digest is None or digest.kind == "missing":
        return "missing"
    if digest.kind == "link":
        return digest.followed or "missing"
    return f"file {digest.md5}" if digest.kind == "file" else digest.kind  # a folder: "Is a directory"


MISSING = PathDigest("missing")


def _unchanged(base: PathDigest, now: PathDigest, mode: RewardMode) -> bool:
    """Whether a path listed as changed holds what the pristine image holds: in ``strict`` mode its
    time too (a task may ask to touch files), in ``intercode`` mode what git compares."""
    return same(base, now, mode) and (mode != "strict" or base.mtime == now.mtime)


def in_scope(path: str, mode: RewardMode) -> bool:
    """Whether a change of ``path`` counts at all in this mode."""
    if mode == "intercode":
        return not any(part in INTERCODE_IGNORED_NAMES for part in path.split("/"))
    return path not in STRICT_IGNORED_PATHS and not path.startswith(STRICT_IGNORED_PREFIXES)


def _ancestors(path: str) -> Iterable[str]:
    parts = path.rstrip("/").split("/")
    for i in range(len(parts) - 1, 1, -1):
        yield "/".join(parts[:i])


def _is_parent_of_change(path: str, paths: set[str]) -> bool:
    return any(p.startswith(path.rstrip("/") + "/") for p in paths)


@dataclass(frozen=True)
class ProbeRequest:
    """The paths to digest in both containers.

    ``deep`` paths are digested fully (a folder: every file below it); ``shallow`` ones report a
    folder's kind only, so a changed parent such as ``/usr`` never gets hashed whole.
    """

    deep: tuple[str, ...] = ()
    shallow: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.deep) + len(self.shallow)


def paths_to_probe(
    agent_changes: Sequence[FsChange], gold_changes: Sequence[FsChange], mode: str
) -> ProbeRequest:
    """The paths whose :class:`PathDigest` the env must collect, in BOTH containers, for this mode.

    Those are the in-scope added and changed paths of either side (deleted ones cannot be read). In
    ``intercode`` mode the outermost added paths are digested deep (git compared whole untracked
    folders) and paths inside an added folder are left out; changed paths only need their kind (and a
    file's md5). ``strict`` mode checks files one by one, so every path is shallow.
    """
    mode = check_mode(mode)
    deep: set[str] = set()
    shallow: set[str] = set()
    for changes in (agent_changes, gold_changes):
        added = {c.path for c in changes if c.kind == "A"}
        for change in changes:
            if change.kind == "D" or not in_scope(change.path, mode):
                continue
            if mode == "strict" or change.kind == "C":
                shallow.add(change.path)
            elif not any(a in added for a in _ancestors(change.path)):
                deep.add(change.path)
    return ProbeRequest(tuple(sorted(deep)), tuple(sorted(shallow - deep)))


def _is_dir(path: str, digest: PathDigest | None, changed_paths: set[str]) -> bool:
    if digest is not None and digest.kind != "missing":
        return digest.kind == "dir"
    return _is_parent_of_change(path, changed_paths)  # not probed: a parent of another change is a folder


def change_entries(
    changes: Sequence[FsChange],
    digests: Mapping[str, PathDigest],
    mode: str,
    base_digests: Mapping[str, PathDigest] | None = None,
) -> set[tuple[str, str]]:
    """The set of ``(path, status)`` entries one container shows.

    ``intercode`` statuses follow ``git status --short``: "??" (untracked; a folder as "path/"), "M", "D".
    ``strict`` statuses are Docker's kinds "A", "C", "D". ``base_digests`` (the same paths in a pristine
    container, optional) lets a file that was only touched or rewritten unchanged drop out, as git does.
    """
    mode = check_mode(mode)
    scoped = [c for c in changes if in_scope(c.path, mode)]
    paths = {c.path for c in changes}
    added = {c.path for c in scoped if c.kind == "A"}
    entries: set[tuple[str, str]] = set()
    for change in scoped:
        digest = digests.get(change.path)
        if change.kind == "D":
            entries.add((change.path, "D"))
        elif change.kind == "C":
            base = base_digests.get(change.path) if base_digests else None
            if _is_dir(change.path, digest, paths):
                # A folder is listed as changed whenever something below it is (git tracks files
                # only); in strict mode one whose own mode or owner changed counts.
                if mode == "intercode" or base is None or digest is None or same(base, digest, mode):
                    continue
                entries.add((change.path, "C"))
                continue
            if base is not None and digest is not None and _unchanged(base, digest, mode):
                continue
            entries.add((change.path, "M" if mode == "intercode" else "C"))
        elif mode == "strict":
            entries.add((change.path, "A"))
        elif not any(a in added for a in _ancestors(change.path)):
            if _is_dir(change.path, digest, paths):
                if digest is None or digest.files > 0:  # git does not list an untracked empty folder
                    entries.add((change.path.rstrip("/") + "/", "??"))
            else:
                entries.add((change.path, "??"))
    return entries

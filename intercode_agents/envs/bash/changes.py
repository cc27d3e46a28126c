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
from dataclasses import dataclass
from typing import Any

from intercode_agents.errors import ConfigError
from intercode_agents.reward import RewardMode, check_mode
from intercode_agents.sandbox import Change, ChangeKind, PathState

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


def change_from_docker(item: Mapping[str, Any]) -> Change:
    """A change from an item of the Engine API's changes list (``{"Path": "/x", "Kind": 0}``)."""
    kind = item.get("Kind")
    path = item.get("Path")
    if not isinstance(path, str) or not path.startswith("/") or kind not in _DOCKER_KINDS:
        raise ConfigError(f"not a Docker container change: {dict(item)!r}")
    return Change(path, _DOCKER_KINDS[kind])


def changes_from_docker(items: Iterable[Mapping[str, Any]] | None) -> tuple[Change, ...]:
    """Convert the Engine API's answer (None when nothing changed) into :class:`Change` entries."""
    return tuple(change_from_docker(item) for item in items or ())


def seen_by(state: PathState, mode: RewardMode) -> tuple[Any, ...]:
    """What a reward mode compares of a path's state: ``strict`` all of it but its time;
    ``intercode`` what git tracks (the content, and for a file its owner's execute bit: the
    original's ``git status`` shows a mode change to or from executable as modified, and no other).
    ``followed`` (where a link leads) is left to the intercode content check (:func:`md5sum_view`)."""
    if mode == "strict":
        return (state.kind, state.md5, state.files, state.mode, state.uid, state.gid)
    executable = bool(state.mode & 0o100) if state.kind == "file" and state.mode is not None else None
    return (state.kind, state.md5, state.files, executable)


def same(a: PathState | None, b: PathState | None, mode: RewardMode) -> bool:
    """Whether two states are equal as ``mode`` sees them (both absent counts as equal)."""
    if a is None or b is None:
        return a is b
    return seen_by(a, mode) == seen_by(b, mode)


def md5sum_view(digest: PathState | None) -> str:
    """What ``md5sum PATH`` told of this path, the path's name aside: it follows links."""
    if digest is None or digest.kind == "missing":
        return "missing"
    if digest.kind == "link":
        return digest.followed or "missing"
    return f"file {digest.md5}" if digest.kind == "file" else digest.kind  # a folder: "Is a directory"


def _unchanged(base: PathState, now: PathState, mode: RewardMode) -> bool:
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
    agent_changes: Sequence[Change], gold_changes: Sequence[Change], mode: str
) -> ProbeRequest:
    """The paths whose :class:`PathState` the env must collect, in BOTH containers, for this mode.

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


def _is_dir(path: str, digest: PathState | None, changed_paths: set[str]) -> bool:
    if digest is not None and digest.kind != "missing":
        return digest.kind == "dir"
    return _is_parent_of_change(path, changed_paths)  # not probed: a parent of another change is a folder


def change_entries(
    changes: Sequence[Change],
    digests: Mapping[str, PathState],
    mode: str,
    base_digests: Mapping[str, PathState] | None = None,
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

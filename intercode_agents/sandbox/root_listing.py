"""The root file system's change list from two listings, for engines whose own list is not Docker's.

Docker computes ``GET /containers/{id}/changes`` by walking the container's and the image's trees
and comparing them (moby's naive diff, ``pkg/archive/changes.go``); Podman reads its overlay upper
directory with other rules (containers/storage's overlay diff): a folder whose modification time
changed is "C" even when nothing in it did, a folder whose owner changed is not, a file copied up
unchanged (a hard link made, a mode set and set back) is "C", a folder deleted and made again is
"D", the folder above a change is not always listed, and a folder that replaced a file makes the call
fail with a 500. Scoring compares change lists across engines (the Bash gold facts are cached), so a
backend whose list follows other rules says so (``Backend.docker_changes = False``) and the sandbox
layer uses this module instead: :data:`LIST_SCRIPT` lists every entry of the root file system from
inside the sandbox when it starts (the baseline) and at each question, and :func:`changes` compares
the two listings by moby's rules:

- a path that is new is "A" (and so is everything below a new folder);
- a path whose type, mode, owner or group differs, or (not for folders) whose size or modification
  time differs, is "C";
- a path that is gone is "D", a deleted folder one entry (its content is not listed), and a folder
  replaced by a file is one "C";
- a folder with any change below it is "C" too (the root excepted).

Devices and file capabilities are not listed (``find`` cannot print them): a sandbox cannot make a
device or set a capability (``CAP_MKNOD`` and ``CAP_SETFCAP`` are dropped). Like every slow path
that reads files from inside (``path_states``), the script runs the sandbox's ``find``, believed only
while the engine's own change list shows it and its libraries unchanged (:mod:`.inside_tools`).
"""

from __future__ import annotations

from dataclasses import dataclass

from intercode_agents.sandbox.contract import Change

# POSIX sh and GNU findutils; reads only. One NUL-terminated record per entry of the root's file
# system (mount points such as /proc and the bind-mounted /etc/hosts are other devices: left out):
# device, type, mode, owner, group, size, modification time, path (names may hold any byte but NUL).
LIST_SCRIPT = r"""
export LC_ALL=C
find / -xdev -printf '%D %y %m %U %G %s %T@ %p\0'
"""


@dataclass(frozen=True, slots=True)
class Entry:
    kind: str  # find's %y: f, d, l, p, s, c, b
    mode: int
    uid: int
    gid: int
    size: int
    mtime_ns: int


Listing = dict[str, Entry]


def parse_listing(text: str) -> Listing:
    """:data:`LIST_SCRIPT`'s output as path -> entry (only the root's own device)."""
    records = [r for r in text.split("\0") if r]
    parsed = [r.split(" ", 7) for r in records]
    bad = next((r for r in parsed if len(r) != 8), None)
    if bad is not None or not parsed:
        raise ValueError(f"not a root listing: {(bad or text[:200])!r}")
    root_device = next((p[0] for p in parsed if p[7] == "/"), None)
    listing: Listing = {}
    for device, kind, mode, uid, gid, size, mtime, path in parsed:
        if device == root_device:
            listing[path] = Entry(kind, int(mode, 8), int(uid), int(gid), int(size), _ns(mtime))
    return listing


def _ns(text: str) -> int:
    seconds, _, fraction = text.partition(".")
    return int(seconds) * 1_000_000_000 + int((fraction + "000000000")[:9])


def _same_time(a_ns: int, b_ns: int) -> bool:
    """moby's sameFsTimeSpec: equal seconds, and equal nanoseconds unless one side has none."""
    a_sec, a_nsec = divmod(a_ns, 1_000_000_000)
    b_sec, b_nsec = divmod(b_ns, 1_000_000_000)
    return a_sec == b_sec and (a_nsec == b_nsec or a_nsec == 0 or b_nsec == 0)


def _differs(old: Entry, new: Entry) -> bool:
    """moby's statDifferent: folders compare type, mode and owner only."""
    if (old.kind, old.mode, old.uid, old.gid) != (new.kind, new.mode, new.uid, new.gid):
        return True
    return old.kind != "d" and (old.size != new.size or not _same_time(old.mtime_ns, new.mtime_ns))


def _children(listing: Listing) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in listing:
        if path != "/":
            parent = path.rsplit("/", 1)[0] or "/"
            found.setdefault(parent, []).append(path)
    return found


def changes(old: Listing, new: Listing) -> list[Change]:
    """The changes from ``old`` to ``new`` by moby's naive-diff rules (see the module docstring)."""
    old_children, new_children = _children(old), _children(new)
    out: list[Change] = []

    def walk(path: str, in_old: bool, marked: bool) -> None:
        # ``path`` is a folder of ``new``; ``in_old``: compare its children with the old folder's
        # (a folder that replaced a file, or a new one, has only new children); ``marked``: the
        # folder is listed already (added, changed, or the root).
        mark = len(out)
        before = set(old_children.get(path, ())) if in_old else set()
        for child in new_children.get(path, ()):
            entry, was = new[child], old.get(child) if child in before else None
            listed = was is None or _differs(was, entry)
            if listed:
                out.append(Change(child, "A" if was is None else "C"))
            before.discard(child)
            if entry.kind == "d":
                walk(child, was is not None and was.kind == "d", listed)
        out.extend(Change(child, "D") for child in before)
        if len(out) > mark and not marked:
            out.append(Change(path, "C"))

    if "/" in new:
        walk("/", "/" in old, True)
    return sorted(out)

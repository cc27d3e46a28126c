"""Checkpoints of a task's directory, and rollback to them, verified by digest.

A checkpoint is a tar of the directory taken through the sandbox backend's archive call (the Engine
API's ``GET /containers/{id}/archive`` on Docker), refused past a size cap (what is read is bounded
by the sandbox's disk cap), plus the directory's state as :meth:`Sandbox.path_states
<intercode_agents.sandbox.Sandbox.path_states>` reads it from the engine's host (one digest over all
it holds, its mode, owner and modification time). A rollback:

1. removes, in one command, every entry the directory holds now that the checkpoint does not have (or
   has as another kind), so folders that exist in both keep their inode and a shell inside one stays
   there;
2. extracts the tar over the directory (the backend's ``put_archive``), which rewrites every file
   with its content, mode, owner and (whole-second) time, and sets the folder's own time back to the
   nanosecond;
3. reads the state again: the rollback is *verified* when it equals the checkpoint's. When it does
   not (a process kept writing, a name the listing could not carry), the directory is removed whole
   and extracted again, and checked once more.

What it costs is measured by ``benchmarks/bench_checkpoint.py``. A rollback restores only the
directory: what a command changed elsewhere stays.
"""

from __future__ import annotations

import io
import posixpath
import tarfile
import time
from dataclasses import dataclass

from intercode_agents.errors import IntercodeError
from intercode_agents.sandbox import Sandbox
from intercode_agents.sandbox.path_states import PathState

DEFAULT_MAX_BYTES = 64 << 20  # a checkpoint's tar larger than this is not taken
EMPTY_MD5 = "d41d8cd98f00b204e9800998ecf8427e"


class CheckpointTooLarge(IntercodeError):
    """The directory's tar is larger than the checkpoint cap."""


@dataclass(frozen=True)
class Checkpoint:
    """A task directory as it was before an action (``turn``: the action's turn; 0 is the start)."""

    directory: str
    tar: bytes | None  # None: the directory did not exist
    kinds: dict[str, str]  # absolute path -> "d" for folders, "o" for anything else
    nonempty: frozenset[str]  # regular files that held bytes
    state: PathState
    turn: int
    took_ms: float

    @property
    def size(self) -> int:
        return len(self.tar or b"")

    def note(self) -> dict[str, object]:
        """What a record keeps of it."""
        return {
            "directory": self.directory,
            "turn": self.turn,
            "bytes": self.size,
            "ms": round(self.took_ms, 2),
        }


@dataclass(frozen=True)
class Restored:
    """The outcome of a rollback."""

    checkpoint: Checkpoint
    verified: bool
    removed: int  # entries removed because the checkpoint did not have them
    whole: bool  # the directory had to be removed whole and extracted again
    took_ms: float

    def note(self) -> dict[str, object]:
        return {
            "directory": self.checkpoint.directory,
            "to_turn": self.checkpoint.turn,
            "verified": self.verified,
            "removed": self.removed,
            "whole": self.whole,
            "ms": round(self.took_ms, 2),
        }


async def _read_archive(sandbox: Sandbox, directory: str, max_bytes: int) -> bytes | None:
    """The directory's tar as the engine gives it, or None when it does not exist. (The sandbox's
    disk cap bounds what is read; the checkpoint cap is checked on the whole tar.)"""
    try:
        data = await sandbox.get_archive(directory)
    except FileNotFoundError:
        return None
    if len(data) > max_bytes:
        raise CheckpointTooLarge(f"{directory} is over the checkpoint cap of {max_bytes >> 20} MiB as a tar")
    return data


def _members(tar_bytes: bytes, parent: str) -> tuple[dict[str, str], frozenset[str]]:
    """(kind of every entry, the regular files that hold bytes), by absolute path."""
    with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as tar:
        members = [(posixpath.normpath(posixpath.join(parent, m.name)), m) for m in tar.getmembers()]
    kinds = {path: "d" if m.isdir() else "o" for path, m in members}
    return kinds, frozenset(path for path, m in members if m.isreg() and m.size > 0)


async def _state(sandbox: Sandbox, directory: str) -> PathState:
    return (await sandbox.path_states(deep=[directory]))[directory]


async def take_checkpoint(
    sandbox: Sandbox, directory: str, *, turn: int, max_bytes: int = DEFAULT_MAX_BYTES
) -> Checkpoint:
    """A checkpoint of ``directory`` (raises :class:`CheckpointTooLarge` past ``max_bytes``)."""
    started = time.perf_counter()
    state = await _state(sandbox, directory)
    tar = await _read_archive(sandbox, directory, max_bytes) if state.kind == "dir" else None
    kinds, nonempty = _members(tar, posixpath.dirname(directory)) if tar is not None else ({}, frozenset())
    return Checkpoint(directory, tar, kinds, nonempty, state, turn, (time.perf_counter() - started) * 1000)


# Removes what a checkpoint lacks from its directory, in one command. Arguments: the directory, then
# "d:PATH" for every folder and "o:PATH" for every other entry of the checkpoint. An entry the
# checkpoint does not have, or has as the other kind, is removed (a folder with all it holds); a
# directory that is no folder any more is removed whole. Prints how many entries it removed.
PRUNE_SCRIPT = r"""
dir=$1; shift
declare -A keep
for entry in "$@"; do keep["${entry:2}"]=${entry:0:1}; done
if [ -L "$dir" ] || { [ -e "$dir" ] && [ ! -d "$dir" ]; }; then rm -rf -- "$dir"; echo 1; exit 0; fi
[ -d "$dir" ] || { echo 0; exit 0; }
removed=0
while IFS= read -r -d '' entry; do
  kind=${entry:0:1}; path=${entry:2}
  [ -e "$path" ] || [ -L "$path" ] || continue
  want=${keep[$path]:-}
  [ "$kind" = d ] && is=d || is=o
  if [ "$want" != "$is" ]; then
    rm -rf -- "$path" && removed=$((removed + 1))
  fi
done < <(find "$dir" -mindepth 1 -printf '%y %p\0')
echo "$removed"
"""


async def _prune(sandbox: Sandbox, checkpoint: Checkpoint) -> int:
    """Remove what the checkpoint lacks (see :data:`PRUNE_SCRIPT`); the number of entries removed."""
    entries = [f"{kind}:{path}" for path, kind in checkpoint.kinds.items() if path != checkpoint.directory]
    result = await sandbox.exec(
        ["bash", "-c", PRUNE_SCRIPT, "prune", checkpoint.directory, *entries], timeout=60
    )
    if result.exit_code != 0:
        raise IntercodeError(f"removing what the checkpoint lacks failed: {result.output.strip()[:300]}")
    last = result.output.strip().splitlines()[-1:] or ["0"]
    return int(last[0]) if last[0].isdigit() else 0


async def _extract(sandbox: Sandbox, checkpoint: Checkpoint) -> None:
    assert checkpoint.tar is not None
    await sandbox.put_archive(posixpath.dirname(checkpoint.directory) or "/", checkpoint.tar)
    mtime = checkpoint.state.mtime
    if mtime is not None and mtime % 1_000_000_000:  # the tar keeps whole seconds: set the rest
        seconds, nanos = divmod(mtime, 1_000_000_000)
        await sandbox.exec(
            ["touch", "-m", "-h", "-d", f"@{seconds}.{nanos:09d}", checkpoint.directory], timeout=30
        )


async def restore_checkpoint(sandbox: Sandbox, checkpoint: Checkpoint) -> Restored:
    """Put ``checkpoint``'s directory back and check it against the checkpoint's digest."""
    started = time.perf_counter()
    directory = checkpoint.directory
    removed, whole = 0, False
    if checkpoint.tar is None:
        await sandbox.exec(["rm", "-rf", "--", directory], timeout=60)
    else:
        try:
            removed = await _prune(sandbox, checkpoint)
        except IntercodeError:
            whole = True  # (an agent may have broken bash or find): the directory goes whole
            await sandbox.exec(["rm", "-rf", "--", directory], timeout=60)
        await _extract(sandbox, checkpoint)
    verified = await _state(sandbox, directory) == checkpoint.state
    if not verified and checkpoint.tar is not None and not whole:
        whole = True
        await sandbox.exec(["rm", "-rf", "--", directory], timeout=60)
        await _extract(sandbox, checkpoint)
        verified = await _state(sandbox, directory) == checkpoint.state
    return Restored(checkpoint, verified, removed, whole, (time.perf_counter() - started) * 1000)


async def emptied(sandbox: Sandbox, checkpoint: Checkpoint) -> str | None:
    """How the directory lost what it held since ``checkpoint`` (gone, no file left, or files that held
    bytes now empty), or None. Read from the engine's host where it can be (no command runs)."""
    if checkpoint.tar is None:
        return None
    files = sorted(checkpoint.nonempty)
    states = await sandbox.path_states(deep=[checkpoint.directory], shallow=files)
    now = states[checkpoint.directory]
    if now.kind != "dir":
        return f"{checkpoint.directory} is gone"
    if now.files == 0 and checkpoint.state.files > 0:
        return f"{checkpoint.directory} holds no file any more"
    empty = [path for path in files if states[path].kind == "file" and states[path].md5 == EMPTY_MD5]
    if empty:
        more = f" and {len(empty) - 3} more" if len(empty) > 3 else ""
        return f"the command emptied {', '.join(empty[:3])}{more}"
    return None

"""Where the Bash env keeps the gold's facts and the image's digests.

Always in memory for the process; with ``facts_cache="disk"`` (the default) also in the user cache,
so that a later process (the next eval, a resumed run) does not run every gold again. Entries are
keyed by image ID, so a rebuilt image starts afresh, and by the gold command. The folder name is a
hash of the code that takes the facts (the probe, the change reader, the gold runner): a change to
any of it never reads old entries. A score below 1 is still re-checked against a fresh gold run (see
:mod:`intercode_agents.envs.bash.env`), so a stale entry can never cost an agent.

Facts are written whole to a temporary file and renamed, digests appended one line each, so
concurrent processes never read a torn entry; an entry that does not parse is ignored and recomputed.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from intercode_agents.envs.bash import changes as bash_changes
from intercode_agents.envs.bash import facts as bash_facts
from intercode_agents.envs.bash.facts import GoldFacts
from intercode_agents.errors import ConfigError
from intercode_agents.paths import cache_dir
from intercode_agents.sandbox import Change, PathState, container_fs, mount_changes, path_states
from intercode_agents.sandbox.docker import overlay

DigestKey = tuple[str, bool]  # (path, deep)


def _state_json(d: PathState) -> list[Any]:
    return [d.kind, d.md5, d.files, d.mode, d.uid, d.gid, d.mtime, d.followed]


def _state_of(raw: Any) -> PathState:
    kind, md5, files, mode, uid, gid, mtime, followed = raw
    numbers = (mode, uid, gid, mtime)
    if kind not in ("file", "dir", "link", "other", "missing") or not isinstance(files, int):
        raise ValueError(f"not a path state: {raw!r}")
    if not all(n is None or (isinstance(n, int) and not isinstance(n, bool)) for n in numbers):
        raise ValueError(f"not a path state: {raw!r}")
    text = (md5, followed)
    if not all(v is None or isinstance(v, str) for v in text):
        raise ValueError(f"not a path state: {raw!r}")
    return PathState(kind, md5, files, mode, uid, gid, mtime, followed)


def facts_to_json(gold: str, facts: GoldFacts) -> dict[str, Any]:
    return {
        "gold": gold,
        "output": facts.output,
        "changes": [[c.path, c.kind] for c in facts.changes],
        "digests": {path: _state_json(d) for path, d in facts.digests.items()},
    }


def facts_from_json(raw: dict[str, Any]) -> GoldFacts:
    output = raw["output"]
    if output is not None and not isinstance(output, str):
        raise ValueError("bad output")
    changes = tuple(Change(str(p), k) for p, k in raw["changes"] if k in ("A", "C", "D"))
    if len(changes) != len(raw["changes"]):
        raise ValueError("bad change kind")
    digests = {str(p): _state_of(d) for p, d in raw["digests"].items()}
    return GoldFacts(output, changes, digests)


class FactStore:
    """Gold facts per (image ID, gold command) and pristine digests per image ID."""

    def __init__(self, root: Path | None) -> None:
        self.root = root  # None: memory only
        self._facts: dict[tuple[str, str], GoldFacts] = {}
        self._digests: dict[str, dict[DigestKey, PathState]] = {}

    def clear(self) -> None:
        """Forget what is in memory (the disk entries stay)."""
        self._facts.clear()
        self._digests.clear()

    def _folder(self, image_id: str) -> Path | None:
        if self.root is None:
            return None
        return self.root / code_version() / image_id.removeprefix("sha256:")[:32]

    def facts(self, image_id: str, gold: str) -> GoldFacts | None:
        key = (image_id, gold)
        if key not in self._facts and (folder := self._folder(image_id)) is not None:
            with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
                raw = json.loads((folder / _gold_file(gold)).read_text(encoding="utf-8"))
                if raw.get("gold") == gold:
                    self._facts[key] = facts_from_json(raw)
        return self._facts.get(key)

    def put_facts(self, image_id: str, gold: str, facts: GoldFacts) -> None:
        self._facts[(image_id, gold)] = facts
        folder = self._folder(image_id)
        if folder is not None:
            _write_whole(folder / _gold_file(gold), json.dumps(facts_to_json(gold, facts)))

    def digests(self, image_id: str) -> dict[DigestKey, PathState]:
        """The known digests of the pristine image (a live dict: add with :meth:`put_digests`)."""
        if image_id not in self._digests:
            known: dict[DigestKey, PathState] = {}
            folder = self._folder(image_id)
            if folder is not None:
                with contextlib.suppress(OSError):
                    for line in (folder / "digests.jsonl").read_text(encoding="utf-8").splitlines():
                        with contextlib.suppress(ValueError, TypeError, KeyError):
                            path, deep, digest = json.loads(line)
                            known[(str(path), bool(deep))] = _state_of(digest)
            self._digests[image_id] = known
        return self._digests[image_id]

    def put_digests(self, image_id: str, found: dict[DigestKey, PathState]) -> None:
        self.digests(image_id).update(found)
        folder = self._folder(image_id)
        if folder is None or not found:
            return
        lines = "".join(json.dumps([p, deep, _state_json(d)]) + "\n" for (p, deep), d in found.items())
        with contextlib.suppress(OSError):
            folder.mkdir(parents=True, exist_ok=True)
            with open(folder / "digests.jsonl", "a", encoding="utf-8") as fh:
                fh.write(lines)


@functools.cache
def code_version() -> str:
    """A hash of the modules whose code decides what the facts are."""
    digest = hashlib.sha256()
    for module in (bash_facts, path_states, container_fs, mount_changes, overlay, bash_changes):
        digest.update(Path(module.__file__ or "").read_bytes())
    return digest.hexdigest()[:16]


def _gold_file(gold: str) -> str:
    return "gold-" + hashlib.sha256(gold.encode("utf-8", errors="surrogateescape")).hexdigest()[:32] + ".json"


def _write_whole(path: Path, text: str) -> None:
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


_stores: dict[Path | None, FactStore] = {}


def fact_store(kind: str) -> FactStore:
    """The process's store of the given kind ("disk": backed by the user cache; "process": memory)."""
    if kind not in ("disk", "process"):
        raise ConfigError(f"facts_cache must be 'disk' or 'process', not {kind!r}")
    root = cache_dir() / "bash-facts" if kind == "disk" else None
    if root not in _stores:
        _stores[root] = FactStore(root)
    return _stores[root]


def clear_fact_stores() -> None:
    """Forget every store's in-memory entries (benchmarks measure a cold process this way)."""
    for store in _stores.values():
        store.clear()

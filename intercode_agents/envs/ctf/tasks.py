"""CTF helpers: the files an env copies into the sandbox for a task."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from intercode_agents.datasets.task import Task
from intercode_agents.errors import DatasetError

# Placeholders that only keep empty asset folders in git, and bytecode caches: not part of a puzzle.
_SKIPPED_NAMES = frozenset({".placeholder", ".ignore"})

# CTF assets of 4 MiB and more that the pinned data copy lacks (see the data README).
CTF_LOST_ASSETS: dict[int, str] = {
    65: "dds1-alpine.flag.img.gz",
    66: "disk.img.gz",
    70: "suspicious.dd.sda1",
    71: "Forensics is fun.pptm",
}
_REMOTE_HOST = re.compile(
    r"\b(?:nc\s+)?([a-z0-9-]+\.(?:picoctf\.(?:net|org)|challenges\.picoctf\.org))\b", re.I
)


def remote_service(query: str) -> str | None:
    """The picoCTF host a task's question asks the solver to reach, if any."""
    host = _REMOTE_HOST.search(query)
    return host.group(1) if host else None


def ctf_unavailable(record: dict[str, Any], asset_dir: Path, task_id: Any) -> str | None:
    """Why a CTF task cannot run here (its setup needs the network, its assets are missing), or None."""
    if record.get("setup"):
        return f"its setup downloads from the internet ({record['setup']!r}) and sandboxes have no network"
    if not asset_dir.is_dir():
        return f"its asset folder {asset_dir} is missing"
    lost = CTF_LOST_ASSETS.get(task_id) if isinstance(task_id, int) else None
    if lost and not (asset_dir / lost).exists():
        return f"its asset {lost!r} (4 MiB or more) is not part of the pinned data copy"
    return None


def ctf_asset_files(task: Task) -> list[Path]:
    """The task's asset files (sorted), never anything under its ``solution/`` folder.

    Paths are absolute; the env copies them keeping their path relative to ``task.meta["asset_dir"]``.
    """
    if "asset_dir" not in task.meta:
        raise DatasetError(f"task {task.id} has no asset folder; only CTF tasks have assets")
    asset_dir = Path(task.meta["asset_dir"])
    if not asset_dir.is_dir():
        raise DatasetError(f"the asset folder {asset_dir} of task {task.id} is missing")
    files = []
    for path in sorted(asset_dir.rglob("*")):
        rel = path.relative_to(asset_dir)
        hidden = rel.parts[0] == "solution" or "__pycache__" in rel.parts or path.name in _SKIPPED_NAMES
        if not hidden and not path.is_dir():
            files.append(path)
    return files

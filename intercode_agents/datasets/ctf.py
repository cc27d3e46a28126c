"""CTF helpers: the files an env copies into the sandbox for a task."""

from __future__ import annotations

from pathlib import Path

from intercode_agents.datasets.task import Task
from intercode_agents.errors import DatasetError

# Placeholders that only keep empty asset folders in git, and bytecode caches: not part of a puzzle.
_SKIPPED_NAMES = frozenset({".placeholder", ".ignore"})


def ctf_asset_files(task: Task) -> list[Path]:
    """The task's asset files (sorted), never anything under its ``solution/`` folder.

    Paths are absolute; the env copies them keeping their path relative to ``task.meta["asset_dir"]``.
    """
    if task.env != "ctf":
        raise DatasetError(f"task {task.id} is a {task.env} task; only CTF tasks have assets")
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

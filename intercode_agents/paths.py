"""Where the project's data folders (envs/, prompts/, docker/) and caches live.

In a wheel the data folders are shipped under ``intercode_agents/_data``; in a source checkout
(or an editable install) they sit at the repository's top level.
"""

from __future__ import annotations

import os
from pathlib import Path

_PKG = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """Return the shipped data folder ``name`` ("envs", "prompts" or "docker")."""
    for candidate in (_PKG / "_data" / name, _PKG.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"data folder {name!r} is missing from the installation")


def cache_dir() -> Path:
    """The user cache (datasets, model weights). ``INTERCODE_AGENTS_CACHE`` overrides it."""
    root = os.environ.get("INTERCODE_AGENTS_CACHE")
    if root:
        path = Path(root)
    else:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        path = Path(base) / "intercode-agents"
    path.mkdir(parents=True, exist_ok=True)
    return path

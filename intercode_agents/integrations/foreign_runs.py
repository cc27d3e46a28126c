"""Runs made elsewhere, opened as ours: Inspect logs and ATIF trajectories become run directories.

``intercode-agents view`` and ``report`` take, besides our run directories, an Inspect log (``.eval``
or ``.json``), a folder of them, an ATIF file, or a folder of ATIF files (a Harbor job folder among
them). Each is read into our records (:mod:`.inspect.log_import`, :mod:`.atif.importer`) and written
as a run directory of its own (``trajectories.jsonl`` and ``imported.json``, which says where the
records came from) under the user cache, keyed by the source's path; the report then reads it as it
reads any run, so our runs and theirs sit side by side, episode by episode. An Inspect log is one run;
the ATIF files of one folder are one run. A source newer than its import is read again.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from intercode_agents.errors import ConfigError
from intercode_agents.integrations.atif.importer import atif_files, is_atif, read_all
from intercode_agents.integrations.inspect.log_import import is_inspect_log, read_log
from intercode_agents.paths import cache_dir
from intercode_agents.runner.run_dir import TRAJECTORIES, RecordWriter, write_json
from intercode_agents.trajectory import Trajectory

IMPORTED = "imported.json"


def is_ours(path: Path) -> bool:
    """A run directory of ours, or a folder of them."""
    return path.is_dir() and ((path / TRAJECTORIES).is_file() or any(path.glob(f"*/{TRAJECTORIES}")))


def _inspect_logs(path: Path) -> list[Path]:
    if path.is_file():
        return [path] if is_inspect_log(path) else []
    return [p for p in sorted(path.rglob("*")) if p.suffix in (".eval", ".json") and is_inspect_log(p)]


def runs_of(path: Path) -> list[Path]:
    """The run directories holding what ``path`` holds: itself for one of ours, else its imports."""
    if is_ours(path):
        return [path]
    if not path.exists():
        raise ConfigError(f"run directory {path} does not exist")
    logs = _inspect_logs(path)
    atif = [path] if path.is_file() and is_atif(path) else ([] if path.is_file() else atif_files(path))
    if not logs and not atif:
        raise ConfigError(
            f"{path} holds no trajectories.jsonl (it is no run directory of ours), no Inspect log "
            "(.eval, .json) and no ATIF trajectory"
        )
    runs = [_imported(log, "inspect", lambda log=log: read_log(log)) for log in logs]
    if atif:
        runs.append(_imported(path, "atif", lambda: read_all(atif)))
    return runs


def _stamp(path: Path) -> str:
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    latest = max((p.stat().st_mtime_ns for p in files), default=0)
    return f"{len(files)}:{latest}"


def _imported(source: Path, kind: str, read: object) -> Path:
    """The run directory of ``source``'s records in the user cache, (re)written when needed."""
    key = hashlib.sha256(f"{kind}:{source.resolve()}".encode()).hexdigest()[:16]
    folder = cache_dir() / "imports" / f"{source.name}-{key}"
    about = folder / IMPORTED
    stamp = _stamp(source)
    if about.is_file() and json.loads(about.read_text(encoding="utf-8")).get("stamp") == stamp:
        return folder
    records: list[Trajectory] = read()  # type: ignore[operator]
    if not records:
        raise ConfigError(f"{source} holds no episodes to show")
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    with RecordWriter(folder / TRAJECTORIES) as writer:
        for record in records:
            writer.write(record)
    write_json(
        about, {"source": str(source.resolve()), "format": kind, "stamp": stamp, "episodes": len(records)}
    )
    return folder


def report_path(source: Path, runs: list[Path]) -> Path:
    """Where the report of an imported source goes: in its one run's folder, or beside its runs."""
    if len(runs) == 1:
        return runs[0] / "report.html"
    key = hashlib.sha256(str(source.resolve()).encode()).hexdigest()[:16]
    return cache_dir() / "imports" / f"{source.name}-{key}-report.html"

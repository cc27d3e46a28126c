"""A run directory: ``run.json`` (the settings), ``trajectories.jsonl`` (one record per finished
episode), ``summary.json`` (the metrics, written at the end) and ``run.lock`` (held by the one process
writing it: :mod:`.run_lock`). Which records count is decided by :mod:`.run_records`.

Records are appended one at a time, flushed and fsynced, so a crash loses only the episodes that were
still running. Reading tolerates a torn last line (a write cut short by a crash) and cuts it off before
more records are appended, so the next record starts on a line of its own.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from intercode_agents.errors import ConfigError
from intercode_agents.trajectory import Trajectory

RUN_JSON = "run.json"
TRAJECTORIES = "trajectories.jsonl"
SUMMARY = "summary.json"

#: Settings that decide what a run's records mean; a resume must match them exactly.
IDENTITY_KEYS: tuple[str, ...] = ("env", "tasks", "limit", "task_ids", "strategy", "strategy_settings")
IDENTITY_KEYS += ("model", "model_settings", "model_options", "turns", "reward", "seed", "epochs")
IDENTITY_KEYS += ("execution",)
#: Identity settings added after the first release, as runs that predate them were made.
IDENTITY_DEFAULTS: dict[str, Any] = {"epochs": 1, "model_options": {}, "execution": "session"}


TORN_LINE = "the torn end of a write cut short by a crash (a resume plays that episode again)"


def parse_lines(data: bytes) -> tuple[list[tuple[int, Trajectory | str]], int]:
    """Each non-blank line of a records file as (line number, record or why it is not one), and the byte
    length of the valid part. A torn last line (a write cut short by a crash) comes last, as
    ``TORN_LINE``, and is not part of the valid length."""
    parsed: list[tuple[int, Trajectory | str]] = []
    offset = 0
    lines = data.split(b"\n")
    for number, line in enumerate(lines, start=1):
        is_last = number == len(lines)
        if line.strip():
            try:
                parsed.append((number, Trajectory.model_validate_json(line)))
            except ValidationError as exc:
                if is_last or all(not rest.strip() for rest in lines[number:]):
                    parsed.append((number, TORN_LINE))
                    break
                parsed.append((number, f"not a trajectory record ({exc.errors()[0]['msg']})"))
        offset += len(line) + (0 if is_last else 1)
    return parsed, offset


def read_records(path: Path) -> tuple[list[Trajectory], int]:
    """The records of ``path`` in file order and the byte length of its valid part (a torn last line
    is left out). A corrupt line that is not the last one is not a crash artefact: it raises ConfigError.
    """
    if not path.is_file():
        return [], 0
    parsed, valid_length = parse_lines(path.read_bytes())
    records: list[Trajectory] = []
    for number, item in parsed:
        if item == TORN_LINE:
            break
        if isinstance(item, str):
            raise ConfigError(f"{path} line {number} is {item}; fix or remove that line, then resume")
        records.append(item)
    return records, valid_length


class RecordWriter:
    """Appends records to ``trajectories.jsonl``, each one flushed and fsynced at once."""

    def __init__(self, path: Path, *, valid_length: int | None = None) -> None:
        self.path = path
        if valid_length is not None and path.is_file() and path.stat().st_size > valid_length:
            with path.open("r+b") as handle:
                handle.truncate(valid_length)
        self._handle: IO[bytes] = path.open("ab")
        if self._handle.tell() and not _ends_with_newline(path):
            self._handle.write(b"\n")

    def write(self, traj: Trajectory) -> None:
        self._handle.write(traj.model_dump_json().encode("utf-8") + b"\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as handle:
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"


def write_json(path: Path, payload: dict[str, Any]) -> None:
    """Write ``payload`` atomically (a temporary file renamed over the target)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(payload, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def read_run_settings(directory: Path) -> dict[str, Any]:
    path = directory / RUN_JSON
    if not path.is_file():
        raise ConfigError(f"nothing to resume in {directory}: it has no {RUN_JSON}")
    try:
        settings = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    if not isinstance(settings, dict):
        raise ConfigError(f"{path} does not hold a settings object")
    return settings


def settings_mismatch(saved: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """The identity settings that differ, as ``key: saved -> current`` lines."""
    normal = json.loads(json.dumps(current, default=str))  # compare as stored (tuples become lists)
    problems = []
    for key in IDENTITY_KEYS:
        if key == "task_ids":
            continue  # reported separately: the list is long
        before, after = (
            saved.get(key, IDENTITY_DEFAULTS.get(key)),
            normal.get(key, IDENTITY_DEFAULTS.get(key)),
        )
        if before != after:
            problems.append(f"{key}: {before!r} -> {after!r}")
    if saved.get("task_ids") != normal.get("task_ids"):
        before, after = set(saved.get("task_ids") or []), set(normal.get("task_ids") or [])
        problems.append(
            f"task selection: {len(before)} tasks -> {len(after)} "
            f"({len(after - before)} added, {len(before - after)} removed)"
        )
    return problems

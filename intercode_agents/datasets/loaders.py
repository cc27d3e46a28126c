"""Turn the InterCode JSON files and the project's own mini sets into :class:`Task` records.

One loader per (env, split). The InterCode files come from the data root; the mini sets live in the
shipped ``envs/mini/`` folder and need no download. Each split is read once per process.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from intercode_agents.datasets.mbpp import entry_point
from intercode_agents.datasets.task import Task
from intercode_agents.errors import DatasetError
from intercode_agents.paths import data_dir

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


@dataclass(frozen=True)
class SplitSource:
    """Where one split's tasks come from."""

    env: str
    split: str
    load: Callable[[Path | None], list[Task]]
    needs_data: bool  # False for the shipped mini sets


def mini_dir() -> Path:
    """The shipped folder of the project's own small task sets."""
    return data_dir("envs") / "mini"


def _read_json(path: Path) -> list[dict[str, Any]]:
    try:
        with open(path, encoding="utf-8") as handle:
            records = json.load(handle)
    except FileNotFoundError as exc:
        raise DatasetError(f"task file {path} is missing") from exc
    except json.JSONDecodeError as exc:
        raise DatasetError(f"task file {path} is not valid JSON: {exc}") from exc
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise DatasetError(f"task file {path} must hold a JSON list of objects")
    return records


def _field(record: dict[str, Any], key: str, path: Path, index: int) -> Any:
    if key not in record:
        raise DatasetError(f"task #{index} of {path} has no {key!r} field")
    return record[key]


# -- bash ------------------------------------------------------------------------------------------
def _bash_split(split: str, rel_json: str | None, image: str, script: str | None) -> SplitSource:
    def load(root: Path | None) -> list[Task]:
        if rel_json is None or script is None:  # the mini set
            path, fs_script = mini_dir() / "bash.json", mini_dir() / "bash_fs.sh"
        else:
            path, fs_script = _root(root) / rel_json, _root(root) / "docker" / "bash_scripts" / script
        return [
            Task(
                id=f"bash/{split}/{i}",
                env="bash",
                split=split,
                query=_field(r, "query", path, i),
                gold=_field(r, "gold", path, i),
                image=image,
                group={"fs": split},
                meta={"fs_script": str(fs_script), "source": "mini" if rel_json is None else "nl2bash"},
            )
            for i, r in enumerate(_read_json(path))
        ]

    return SplitSource("bash", split, load, needs_data=rel_json is not None)


# -- sql -------------------------------------------------------------------------------------------
def _sql_split(split: str, rel_json: str | None) -> SplitSource:
    def load(root: Path | None) -> list[Task]:
        path = mini_dir() / "sql.json" if rel_json is None else _root(root) / rel_json
        tasks = []
        for i, r in enumerate(_read_json(path)):
            db = _field(r, "db", path, i)
            group = {"db": db} | ({"hardness": r["hardness"]} if "hardness" in r else {})
            meta: dict[str, Any] = {"db": db}
            if "db_tables" in r:
                meta["db_tables"] = r["db_tables"]
            if split == "wikisql":
                meta["note"] = "WikiSQL golds are logical forms; many are not executable SQL"
            tasks.append(
                Task(
                    id=f"sql/{split}/{i}",
                    env="sql",
                    split=split,
                    query=_field(r, "query", path, i),
                    gold=_field(r, "gold", path, i),
                    image="sql",
                    group=group,
                    meta=meta,
                )
            )
        return tasks

    return SplitSource("sql", split, load, needs_data=rel_json is not None)


# -- python ----------------------------------------------------------------------------------------
def _python_split(split: str, rel_json: str | None) -> SplitSource:
    def load(root: Path | None) -> list[Task]:
        path = mini_dir() / "python.json" if rel_json is None else _root(root) / rel_json
        tasks = []
        for i, r in enumerate(_read_json(path)):
            gold = _field(r, "gold", path, i)
            tests = list(_field(r, "tests", path, i))
            task_id = r.get("task_id", i)
            key = task_id if rel_json is not None else i
            tasks.append(
                Task(
                    id=f"python/{split}/{key}",
                    env="python",
                    split=split,
                    query=_field(r, "query", path, i),
                    gold=gold,
                    image="python",
                    group={},
                    meta={
                        "task_id": task_id,
                        "tests": tests,
                        "test_setup_code": r.get("test_setup_code", ""),
                        "entry_point": entry_point(gold, tests, where=f"task #{i} of {path}"),
                    },
                )
            )
        return tasks

    return SplitSource("python", split, load, needs_data=rel_json is not None)


# -- ctf -------------------------------------------------------------------------------------------
def _ctf_unavailable(record: dict[str, Any], asset_dir: Path, task_id: Any) -> str | None:
    if record.get("setup"):
        return f"its setup downloads from the internet ({record['setup']!r}) and sandboxes have no network"
    if not asset_dir.is_dir():
        return f"its asset folder {asset_dir} is missing"
    lost = CTF_LOST_ASSETS.get(task_id) if isinstance(task_id, int) else None
    if lost and not (asset_dir / lost).exists():
        return f"its asset {lost!r} (4 MiB or more) is not part of the pinned data copy"
    return None


def _ctf_split(split: str, rel_json: str | None) -> SplitSource:
    def load(root: Path | None) -> list[Task]:
        if rel_json is None:
            path, assets = mini_dir() / "ctf.json", mini_dir() / "ctf_assets"
        else:
            path = _root(root) / rel_json
            assets = path.parent / "task_assets"
        tasks = []
        for i, r in enumerate(_read_json(path)):
            task_id = _field(r, "task_id", path, i)
            tags = list(r.get("tags", []))
            asset_dir = assets / str(task_id)
            meta: dict[str, Any] = {
                "task_id": task_id,
                "tags": tags,
                "source": r.get("source", ""),
                "asset_dir": str(asset_dir),
            }
            for optional in ("hint", "setup"):
                if optional in r:
                    meta[optional] = r[optional]
            host = _REMOTE_HOST.search(str(r.get("query", "")))
            if host:  # the original ran with network access; here it is informative only
                meta["remote_service"] = host.group(1)
            tasks.append(
                Task(
                    id=f"ctf/{task_id}" if rel_json is not None else f"ctf/{split}/{task_id}",
                    env="ctf",
                    split=split,
                    query=_field(r, "query", path, i),
                    gold=_field(r, "gold", path, i),
                    image="ctf",
                    group={"tag": tags[0]} if tags else {},
                    meta=meta,
                    unavailable=_ctf_unavailable(r, asset_dir, task_id),
                )
            )
        return tasks

    return SplitSource("ctf", split, load, needs_data=rel_json is not None)


def _root(root: Path | None) -> Path:
    if root is None:
        raise DatasetError("this split needs the InterCode data root")
    return root


SOURCES: dict[str, tuple[SplitSource, ...]] = {
    "bash": (
        *(
            _bash_split(f"fs{n}", f"data/nl2bash/nl2bash_fs_{n}.json", f"bash-fs{n}", f"setup_nl2b_fs_{n}.sh")
            for n in range(1, 5)
        ),
        _bash_split("test", "data/nl2bash/test_queries.json", "bash-fstest", "setup_fs.sh"),
        _bash_split("mini", None, "bash-mini", None),
    ),
    "sql": (
        _sql_split("spider", "data/sql/spider/ic_spider_dev.json"),
        _sql_split("wikisql", "data/sql/wikisql/ic_wikisql_dev.json"),
        _sql_split("mini", None),
    ),
    "python": (_python_split("mbpp", "data/python/mbpp/ic_mbpp.json"), _python_split("mini", None)),
    "ctf": (_ctf_split("picoctf", "data/ctf/ic_ctf.json"), _ctf_split("mini", None)),
}

# What "all tasks of an env" means when no selector is given: the InterCode set the paper reports.
DEFAULT_SPLITS: dict[str, tuple[str, ...]] = {
    "bash": ("fs1", "fs2", "fs3", "fs4"),
    "sql": ("spider",),
    "python": ("mbpp",),
    "ctf": ("picoctf",),
}


@cache
def load_split(env: str, split: str, root: Path | None) -> tuple[Task, ...]:
    """All tasks of one split (``root`` is ignored by the mini sets). Cached per process."""
    source = next(s for s in SOURCES[env] if s.split == split)
    return tuple(source.load(root if source.needs_data else None))

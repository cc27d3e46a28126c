"""Task sources: the ``tasks`` section of an env YAML, turned into :class:`Task` records.

Every env, ours and users', reads its tasks through this one mechanism::

    tasks:
      default: [spider]            # the env's set when no selector is given (default: every split)
      gold: [spider]               # what ``gold ENV`` replays by default (default: ``default``)
      splits:
        spider:
          file: data:data/sql/spider/ic_spider_dev.json
          image: sql               # the short image name the tasks run in (default: the env's name)
          id: "{env}/{split}/{index}"
          fields: {query: question, gold: answer}
          options: {group: [db]}   # read by the env class's ``task_details`` hook

``file`` is a JSON list of objects, or JSON lines (either may be gzipped, ``.gz``). It is written
``data:PATH`` (in the InterCode data root, checked and downloaded on demand), ``envs:PATH`` (the
shipped ``envs/`` folder), ``package:MODULE/PATH`` (a file an installed Python package ships, read
where it is installed) or as a path relative to the YAML file.

``fields`` maps a key of the env's record shape to a field of the file's records, to a template
over them (``"{prompt}{canonical_solution}"``), or to a list of those; the mapped keys are added to
each record before anything else reads it. ``query`` and ``gold`` become the task's question and gold
answer. ``id`` is a template over the record, ``env``, ``split`` and ``index`` (the 0-based position
in the file). The env class's :meth:`~intercode_agents.envs.base.Env.task_details` gives the task's
metric groups, meta and availability.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Protocol, cast

from intercode_agents.datasets.task import Task, TaskDetails
from intercode_agents.errors import ConfigError, DatasetError
from intercode_agents.paths import data_dir

DEFAULT_ID = "{env}/{split}/{index}"
_SPLIT_KEYS = {"file", "image", "id", "fields", "options"}


@dataclass(frozen=True)
class TaskSource:
    """One split of an env: its file, image, id template, field mapping and options."""

    env: str
    split: str
    file: str
    folder: Path  # the env YAML's folder: relative paths start there
    image: str
    id_template: str = DEFAULT_ID
    fields: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def needs_data(self) -> bool:
        """Whether the split reads from the InterCode data root."""
        return self.file.startswith("data:")

    @property
    def data_family(self) -> str:
        """The InterCode data family the split needs checked (and downloaded)."""
        return str(self.options.get("data_family", self.env))

    @property
    def id_parts(self) -> int:
        """How many ``/``-separated parts the split's ids have (``ctf/42``: 2)."""
        return self.id_template.count("/") + 1

    def resolve(self, ref: str, root: Path | None) -> Path:
        """The file a reference of this split names (its ``file`` or a path in its options)."""
        kind, sep, rest = ref.partition(":")
        if sep and kind == "data":
            if root is None:
                raise DatasetError(f"{ref!r} of split {self.env}/{self.split} needs the InterCode data root")
            return root / rest
        if sep and kind == "envs":
            return data_dir("envs") / rest
        if sep and kind == "package":
            return _package_file(rest, self)
        return self.folder / ref


@dataclass(frozen=True)
class EnvTasks:
    """Every split of an env, and its default selections."""

    env: str
    splits: tuple[TaskSource, ...]
    default: tuple[str, ...]
    gold: tuple[str, ...]
    class_ref: str
    spec_path: Path

    def split(self, name: str) -> TaskSource:
        for source in self.splits:
            if source.split == name:
                return source
        raise ConfigError(f"env {self.env!r} has no split {name!r}; splits: {', '.join(self.names)}")

    @property
    def names(self) -> list[str]:
        return [s.split for s in self.splits]


def _package_file(rest: str, source: TaskSource) -> Path:
    module, _, inner = rest.partition("/")
    found = importlib.util.find_spec(module) if module.isidentifier() else None
    if found is None or not found.submodule_search_locations:
        raise DatasetError(
            f"split {source.env}/{source.split} reads its tasks from the Python package {module!r}, "
            f"which is not installed; install it (pip install intercode-agents[test] pulls it in)"
        )
    return Path(next(iter(found.submodule_search_locations))) / inner


def _names(value: Any, what: str, known: list[str], where: Path) -> tuple[str, ...]:
    if value is None:
        return tuple(known)
    if not isinstance(value, list) or not all(isinstance(v, str) and v in known for v in value):
        raise ConfigError(
            f"env definition {where}: tasks.{what} must list splits among {known}, got {value!r}"
        )
    return tuple(value)


def env_tasks(name_or_path: str | Path) -> EnvTasks:
    """The task sources an env's YAML declares (ConfigError for an unknown env or a bad section)."""
    from intercode_agents.spec import load_spec

    spec = load_spec(name_or_path)
    return _parse(spec.name, spec.path, spec.class_ref, _frozen_section(spec.tasks))


def _frozen_section(section: dict[str, Any]) -> str:
    return json.dumps(section)  # keeps the splits in their written order


@cache
def _parse(env: str, path: Path, class_ref: str, section_json: str) -> EnvTasks:
    section = json.loads(section_json)
    raw_splits = section.get("splits")
    if not isinstance(raw_splits, dict) or not raw_splits:
        raise ConfigError(f"env definition {path}: tasks.splits must map split names to their source")
    unknown = set(section) - {"splits", "default", "gold"}
    if unknown:
        raise ConfigError(f"env definition {path}: the tasks section has unknown keys {sorted(unknown)}")
    splits = []
    for split, row in raw_splits.items():
        if not isinstance(row, dict) or not isinstance(row.get("file"), str):
            raise ConfigError(f"env definition {path}: split {split!r} needs a 'file'")
        if set(row) - _SPLIT_KEYS:
            raise ConfigError(
                f"env definition {path}: split {split!r} has unknown keys {sorted(set(row) - _SPLIT_KEYS)}; "
                f"allowed: {sorted(_SPLIT_KEYS)}"
            )
        id_template = str(row.get("id", DEFAULT_ID))
        if not id_template.startswith(f"{env}/") and not id_template.startswith("{env}/"):
            raise ConfigError(f"env definition {path}: split {split!r}: ids must start with '{env}/'")
        fields, options = row.get("fields") or {}, row.get("options") or {}
        if not isinstance(fields, dict) or not isinstance(options, dict):
            raise ConfigError(f"env definition {path}: split {split!r}: 'fields' and 'options' are mappings")
        splits.append(
            TaskSource(
                env=env,
                split=str(split),
                file=row["file"],
                folder=path.parent,
                image=str(row.get("image", env)),
                id_template=id_template,
                fields=fields,
                options=options,
            )
        )
    names = [s.split for s in splits]
    default = _names(section.get("default"), "default", names, path)
    gold = _names(section.get("gold"), "gold", names, path) if "gold" in section else default
    return EnvTasks(env, tuple(splits), default, gold, class_ref, path)


# -- reading records ---------------------------------------------------------------------------
def read_records(path: Path) -> list[dict[str, Any]]:
    """The records of a task file: a JSON list of objects or JSON lines, gzipped when ``.gz``."""
    opener = gzip.open if path.suffix == ".gz" else open
    lines = path.name.removesuffix(".gz").endswith(".jsonl")
    try:
        with opener(path, "rt", encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError as exc:
        raise DatasetError(f"task file {path} is missing") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"task file {path} cannot be read: {exc}") from exc
    try:
        if lines:
            records = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            records = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DatasetError(f"task file {path} is not valid JSON{' lines' if lines else ''}: {exc}") from exc
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise DatasetError(f"task file {path} must hold a list of JSON objects")
    return records


def _value(how: Any, record: dict[str, Any], where: str) -> Any:
    if isinstance(how, list):
        return [_value(item, record, where) for item in how]
    if not isinstance(how, str):
        raise DatasetError(f"{where}: a field mapping is a field name, a template or a list, not {how!r}")
    if "{" in how:
        try:
            return how.format_map(record)
        except (KeyError, IndexError, ValueError) as exc:
            raise DatasetError(f"{where}: the template {how!r} does not fit the record ({exc!r})") from exc
    if how not in record:
        raise DatasetError(f"{where} has no {how!r} field")
    return record[how]


def mapped(record: dict[str, Any], source: TaskSource, where: str) -> dict[str, Any]:
    """``record`` with the source's mapped fields added."""
    return record | {key: _value(how, record, where) for key, how in source.fields.items()}


class TaskDetailer(Protocol):
    """What the datasets ask of an env class: the details of the task made from a record (see
    :meth:`intercode_agents.envs.base.Env.task_details`)."""

    def task_details(
        self, record: dict[str, Any], source: TaskSource, index: int, root: Path | None
    ) -> TaskDetails: ...


def build_tasks(source: TaskSource, root: Path | None) -> list[Task]:
    """The tasks of one split, read through its env class's ``task_details`` hook."""
    from intercode_agents.spec import load_spec

    # the env class itself (task_details is a classmethod); the loader only knows it is a class
    env_class = cast(TaskDetailer, load_spec(source.env).load_class())
    path = source.resolve(source.file, root)
    tasks = []
    for index, raw in enumerate(read_records(path)):
        where = f"task #{index} of {path}"
        record = mapped(raw, source, where)
        for key in ("query", "gold"):
            if key not in record:
                raise DatasetError(f"{where} has no {key!r} field (map one under the split's 'fields')")
        details = env_class.task_details(record, source, index, root)
        try:
            task_id = source.id_template.format_map(
                {**record, "env": source.env, "split": source.split, "index": index}
            )
        except (KeyError, IndexError, ValueError) as exc:
            raise DatasetError(
                f"{where}: the id template {source.id_template!r} does not fit ({exc!r})"
            ) from exc
        tasks.append(
            Task(
                id=task_id,
                env=source.env,
                split=source.split,
                query=str(record["query"]),
                gold=str(record["gold"]),
                image=source.image,
                group=details.group,
                meta=details.meta,
                unavailable=details.unavailable,
                public_fields=details.public,
            )
        )
    return tasks


@cache
def load_split(env: str, split: str, root: Path | None) -> tuple[Task, ...]:
    """All tasks of one split (``root`` is the data root, for splits that read from it). Cached per
    process."""
    source = env_tasks(env).split(split)
    return tuple(build_tasks(source, root if source.needs_data else None))

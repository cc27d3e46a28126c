"""Load, select and look up tasks.

Selector syntax (``select_tasks`` and the CLI's ``--tasks``): comma-separated terms, each one of

- a split name of the env: ``fs1`` .. ``fs4``, ``test``, ``mini`` (bash); ``spider``, ``wikisql``, ``mini``
  (sql); ``mbpp``, ``humaneval``, ``mini`` (python); ``picoctf``, ``mini`` (ctf); a user env's own;
- a task id: ``bash/fs1/3``, ``sql/spider/10``, ``python/mbpp/11``, ``python/humaneval/0``, ``ctf/42``,
  ``ctf/mini/0``. Ids end in the task's position in its split's file (0-based) for Bash, SQL, HumanEval
  and the mini sets, and in the task's own id for MBPP (``python/mbpp/11`` is MBPP task 11, the file's
  11th record) and picoCTF (each split's ``id`` template in its env YAML says which);
- a position in a split's file, the same form for every env: ``python/mbpp/#10`` (the 11th record,
  MBPP task 11), ``bash/fs1/#3``, ``ctf/#0``, and ranges ``sql/spider/#0-99``. The ``#`` keeps the
  two forms apart: ``python/mbpp/10`` is always MBPP's id 10, ``python/mbpp/#10`` always position 10;
- an id glob (``*``, ``?``, ``[...]``): ``bash/fs1/*``, ``sql/spider/1?``;
- a ``key=value`` filter on the task's group or meta: ``hardness=easy``, ``db=poker_player``,
  ``tag=Forensics``, ``fs=fs2``. Values compare case-insensitively; a list-valued field (CTF ``tags``)
  matches when any element does; ``key=a|b`` accepts either value.

Split, id and glob terms add tasks (union); filters then narrow them (intersection). With only
filters, or no selector at all, the pool is the env's default splits (its YAML's ``tasks.default``):
for ours the InterCode set, bash fs1-fs4 (200 tasks), sql spider (1034), python mbpp (974), ctf
picoctf (100). Unavailable tasks (``Task.unavailable``) are left
out unless ``include_unavailable=True``.
"""

from __future__ import annotations

import difflib
import fnmatch
import re
from pathlib import Path
from typing import Any

from intercode_agents.datasets.root import resolve_data_root
from intercode_agents.datasets.sources import EnvTasks, env_tasks, load_split
from intercode_agents.datasets.task import Task
from intercode_agents.errors import ConfigError, UnknownTask

_GLOB_CHARS = frozenset("*?[")


def _env(env: str | Path) -> str:
    """The env's name (an env YAML's path loads its definition)."""
    return env_tasks(env).env


def split_names(env: str | Path) -> list[str]:
    """The splits an env offers, in load order."""
    return env_tasks(env).names


def default_splits(env: str | Path) -> tuple[str, ...]:
    """The splits "all tasks of the env" means when no selector is given."""
    return env_tasks(env).default


def gold_splits(env: str | Path) -> tuple[str, ...]:
    """The splits the gold replay replays by default."""
    return env_tasks(env).gold


def _split_tasks(env: str, split: str, data_root: str | Path | None) -> tuple[Task, ...]:
    source = env_tasks(env).split(split)
    root = resolve_data_root(data_root, families=[source.data_family]) if source.needs_data else None
    return load_split(env, split, root)


def _load(env: str, splits: list[str], data_root: str | Path | None) -> list[Task]:
    wanted = set(splits)
    return [t for s in split_names(env) if s in wanted for t in _split_tasks(env, s, data_root)]


def load_tasks(env: str | Path, *, data_root: str | Path | None = None) -> list[Task]:
    """Every task of ``env`` (all splits, the mini set included), in a stable order."""
    env = _env(env)
    return _load(env, split_names(env), data_root)


def _split_of_id(sources: EnvTasks, task_id: str) -> str | None:
    """The split a task id (or glob) points at; None when it cannot tell (a wildcard in that place).
    A two-part id (``ctf/42``) belongs to the split whose id template has two parts."""
    parts = task_id.split("/")
    if len(parts) == 2:
        short = [s.split for s in sources.splits if s.id_parts == 2]
        return short[0] if len(short) == 1 and not (_GLOB_CHARS & set(parts[1])) else None
    if len(parts) >= 3 and not (_GLOB_CHARS & set(parts[1])):
        return parts[1]
    return None


_POSITION = re.compile(r"#(\d+)(?:-(\d+))?")


def by_position(env: str | Path, term: str, data_root: str | Path | None = None) -> list[Task]:
    """The tasks ``SPLIT/#N`` or ``SPLIT/#A-B`` names by their 0-based position in the split's file."""
    env = _env(env)
    head, _, position = term.rpartition("/")
    found = _POSITION.fullmatch(position)
    split = _split_of_id(env_tasks(env), f"{head}/0")
    if found is None or split not in split_names(env):
        raise ConfigError(
            f"bad position term {term!r}: write <env>/<split>/#N or #A-B, e.g. python/mbpp/#0, bash/fs1/#0-9"
        )
    tasks = _split_tasks(env, split, data_root)
    first = int(found[1])
    last = int(found[2]) if found[2] is not None else first
    if last < first or last >= len(tasks):
        raise ConfigError(f"{term!r}: the {env} split {split!r} has positions #0-{len(tasks) - 1}")
    return list(tasks[first : last + 1])


def get_task(task_id: str, *, data_root: str | Path | None = None) -> Task:
    """The task with this id (or ``SPLIT/#N`` position); :class:`UnknownTask` (with the closest ids as a
    hint) when there is none."""
    from intercode_agents.spec import env_names

    env = task_id.split("/", 1)[0]
    if env not in env_names():
        raise UnknownTask(
            f"unknown task {task_id!r}: ids start with an env name ({', '.join(env_names())}), "
            "e.g. bash/fs1/0"
        )
    if task_id.rpartition("/")[2].startswith("#"):
        tasks = by_position(env, task_id, data_root)
        if len(tasks) != 1:
            raise UnknownTask(f"{task_id!r} names {len(tasks)} tasks, not one")
        return tasks[0]
    split = _split_of_id(env_tasks(env), task_id)
    names = split_names(env)
    pool = _load(env, [split] if split in names else names, data_root)
    for task in pool:
        if task.id == task_id:
            return task
    close = difflib.get_close_matches(task_id, [t.id for t in pool], n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(close)}?" if close else f"; splits of {env}: {', '.join(names)}"
    raise UnknownTask(f"unknown task {task_id!r}{hint}")


def _values(task: Task, key: str) -> list[Any] | None:
    if key in task.group:
        return [task.group[key]]
    if key in task.meta:
        value = task.meta[key]
        return list(value) if isinstance(value, list | tuple) else [value]
    return None


def _filter_keys(tasks: list[Task]) -> list[str]:
    keys: set[str] = set()
    for task in tasks:
        keys.update(task.group)
        keys.update(
            k
            for k, v in task.meta.items()
            if isinstance(v, str | int | bool) or (isinstance(v, list) and all(isinstance(x, str) for x in v))
        )
    return sorted(keys)


def _matches(task: Task, key: str, accepted: set[str]) -> bool:
    values = _values(task, key)
    return values is not None and any(str(v).lower() in accepted for v in values)


def select_tasks(
    env: str | Path,
    selector: str | None = None,
    *,
    data_root: str | Path | None = None,
    include_unavailable: bool = False,
) -> list[Task]:
    """The tasks of ``env`` (a name or an env YAML's path) that ``selector`` names (see the module
    docstring for the syntax)."""
    env = _env(env)
    names = split_names(env)
    terms = [t.strip() for t in (selector or "").split(",") if t.strip()]
    filters: list[tuple[str, set[str]]] = []
    splits: list[str] = []
    patterns: list[str] = []
    positioned: list[Task] = []
    for term in terms:
        if "=" in term:
            key, _, value = term.partition("=")
            if not key.strip() or not value.strip():
                raise ConfigError(f"bad filter {term!r}; write key=value, e.g. hardness=easy")
            filters.append((key.strip(), {v.strip().lower() for v in value.split("|")}))
        elif term in names:
            splits.append(term)
        elif "/" in term and term.rpartition("/")[2].startswith("#"):
            if not term.startswith(f"{env}/"):
                raise ConfigError(f"task position {term!r} does not belong to env {env!r}")
            positioned.extend(by_position(env, term, data_root))
        elif "/" in term:
            if not term.startswith(f"{env}/"):
                raise ConfigError(f"task id or glob {term!r} does not belong to env {env!r}")
            patterns.append(term)
        else:
            raise ConfigError(
                f"unknown split {term!r} for env {env!r}; splits: {', '.join(names)} "
                "(or give a task id, an id glob such as bash/fs1/*, or a key=value filter)"
            )

    needed = set(splits)
    for pattern in patterns:
        split = _split_of_id(env_tasks(env), pattern)
        needed.update([split] if split in names else names)
    needed.update(t.split for t in positioned)
    if not splits and not patterns and not positioned:
        needed.update(default_splits(env))
    loaded = _load(env, [s for s in names if s in needed], data_root)

    if splits or patterns or positioned:
        chosen = [t for t in loaded if t.split in splits] + positioned
        for pattern in patterns:
            is_glob = bool(_GLOB_CHARS & set(pattern))
            hits = [t for t in loaded if (fnmatch.fnmatchcase(t.id, pattern) if is_glob else t.id == pattern)]
            if not hits:
                if not is_glob:
                    get_task(pattern, data_root=data_root)  # raises UnknownTask with a hint
                raise ConfigError(f"the id glob {pattern!r} matches no {env} task")
            chosen.extend(hits)
        chosen_ids = {t.id for t in chosen}
        pool = [t for t in loaded if t.id in chosen_ids]
    else:
        pool = loaded

    if filters:
        known = _filter_keys(pool)
        for key, _ in filters:
            if key not in known:
                raise ConfigError(
                    f"unknown filter key {key!r} for these {env} tasks; keys: {', '.join(known)}"
                )
        pool = [t for t in pool if all(_matches(t, key, accepted) for key, accepted in filters)]
    if not include_unavailable:
        pool = [t for t in pool if t.unavailable is None]
    return pool

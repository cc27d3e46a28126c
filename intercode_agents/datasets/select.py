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
- a ``key=value`` filter on a public field of the task: its groups (``hardness=easy``,
  ``db=poker_player``, ``tag=Forensics``, ``fs=fs2``, a user env's own) and the fields of its public
  view (:meth:`Task.public`: Python's ``entry_point``, SQL's ``db``, CTF's ``tags``). Values compare
  case-insensitively; a
  list-valued field (CTF ``tags``) matches when any element does; ``key=a|b`` accepts either value.
  Hidden fields (the gold, Python's tests and set-up code, Bash's set-up script, CTF hints) are never
  filterable: a filter that matched them would answer guesses about them (``tests=assert f(2) ==
  False`` selecting the task or not), and selectors come from MCP clients, that is from agents.

Split, id and glob terms add tasks (union); filters then narrow them (intersection). With only
filters, or no selector at all, the pool is the env's default splits (its YAML's ``tasks.default``):
for ours the InterCode set, bash fs1-fs4 (200 tasks), sql spider (1034), python mbpp (974), ctf
picoctf (100). Unavailable tasks (``Task.unavailable``) are left
out unless ``include_unavailable=True``.

A selector holds at most :data:`MAX_SELECTOR_TERMS` terms and :data:`MAX_SELECTOR_CHARS` characters
(a :class:`~intercode_agents.errors.ConfigError` says so): selecting costs terms times tasks, and a
selector of ten thousand ids held an MCP server for 24 s. Splits, globs and position ranges name any
set of tasks in a few terms.
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
MAX_SELECTOR_TERMS = 256
MAX_SELECTOR_CHARS = 8192


def split_names(env: str | Path) -> list[str]:
    """The splits an env offers, in load order."""
    return env_tasks(env).names


def default_splits(env: str | Path) -> tuple[str, ...]:
    """The splits "all tasks of the env" means when no selector is given."""
    return env_tasks(env).default


def gold_splits(env: str | Path) -> tuple[str, ...]:
    """The splits the gold replay replays by default."""
    return env_tasks(env).gold


def _split_tasks(sources: EnvTasks, split: str, data_root: str | Path | None) -> tuple[Task, ...]:
    source = sources.split(split)
    root = resolve_data_root(data_root, families=[source.data_family]) if source.needs_data else None
    return load_split(sources.env, split, root)


def _load(sources: EnvTasks, splits: list[str], data_root: str | Path | None) -> list[Task]:
    wanted = set(splits)
    return [t for s in sources.names if s in wanted for t in _split_tasks(sources, s, data_root)]


def load_tasks(env: str | Path, *, data_root: str | Path | None = None) -> list[Task]:
    """Every task of ``env`` (all splits, the mini set included), in a stable order."""
    sources = env_tasks(env)
    return _load(sources, sources.names, data_root)


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
    return _by_position(env_tasks(env), term, data_root)


def _by_position(sources: EnvTasks, term: str, data_root: str | Path | None) -> list[Task]:
    head, _, position = term.rpartition("/")
    found = _POSITION.fullmatch(position)
    split = _split_of_id(sources, f"{head}/0")
    if found is None or split not in sources.names:
        raise ConfigError(
            f"bad position term {term!r}: write <env>/<split>/#N or #A-B, e.g. python/mbpp/#0, bash/fs1/#0-9"
        )
    tasks = _split_tasks(sources, split, data_root)
    first = int(found[1])
    last = int(found[2]) if found[2] is not None else first
    if last < first or last >= len(tasks):
        raise ConfigError(f"{term!r}: the {sources.env} split {split!r} has positions #0-{len(tasks) - 1}")
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
    sources = env_tasks(env)
    split = _split_of_id(sources, task_id)
    names = sources.names
    pool = _load(sources, [split] if split in names else names, data_root)
    for task in pool:
        if task.id == task_id:
            return task
    close = difflib.get_close_matches(task_id, [t.id for t in pool], n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(close)}?" if close else f"; splits of {env}: {', '.join(names)}"
    raise UnknownTask(f"unknown task {task_id!r}{hint}")


def _public_fields(task: Task) -> dict[str, list[Any]]:
    """The values a filter may match on ``task``, by key: its groups and its public view's fields."""
    fields: dict[str, list[Any]] = {key: [value] for key, value in task.group.items()}
    for key, value in task.public().fields.items():
        fields.setdefault(key, list(value) if isinstance(value, list) else [value])
    return fields


def _filter_keys(tasks: list[Task]) -> list[str]:
    return sorted({key for task in tasks for key in _public_fields(task)})


def _terms(selector: str | None) -> list[str]:
    """The selector's terms, within the bounds (see the module docstring)."""
    text = selector or ""
    if len(text) > MAX_SELECTOR_CHARS:
        raise ConfigError(
            f"the selector is {len(text)} characters long; at most {MAX_SELECTOR_CHARS} are read. "
            "Name tasks by split, id glob or position range (bash/fs1/*, python/mbpp/#0-99)"
        )
    terms = [t.strip() for t in text.split(",") if t.strip()]
    if len(terms) > MAX_SELECTOR_TERMS:
        raise ConfigError(
            f"the selector has {len(terms)} terms; at most {MAX_SELECTOR_TERMS} are read. "
            "Name tasks by split, id glob or position range (bash/fs1/*, python/mbpp/#0-99)"
        )
    return terms


def _matches(task: Task, key: str, accepted: set[str]) -> bool:
    return any(str(v).lower() in accepted for v in _public_fields(task).get(key, ()))


def select_tasks(
    env: str | Path,
    selector: str | None = None,
    *,
    data_root: str | Path | None = None,
    include_unavailable: bool = False,
) -> list[Task]:
    """The tasks of ``env`` (a name or an env YAML's path) that ``selector`` names (see the module
    docstring for the syntax)."""
    terms = _terms(selector)
    sources = env_tasks(env)  # (reads the env's YAML: once, not per term)
    env, names = sources.env, sources.names
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
            positioned.extend(_by_position(sources, term, data_root))
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
        split = _split_of_id(sources, pattern)
        needed.update([split] if split in names else names)
    needed.update(t.split for t in positioned)
    if not splits and not patterns and not positioned:
        needed.update(sources.default)
    loaded = _load(sources, [s for s in names if s in needed], data_root)

    if splits or patterns or positioned:
        chosen = [t for t in loaded if t.split in splits] + positioned
        by_id = {t.id: t for t in loaded}
        for pattern in patterns:
            is_glob = bool(_GLOB_CHARS & set(pattern))
            if is_glob:
                hits = [t for t in loaded if fnmatch.fnmatchcase(t.id, pattern)]
            else:
                hits = [by_id[pattern]] if pattern in by_id else []
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
                    f"no filter on {key!r} for these {env} tasks: filters match public fields only "
                    f"(the groups and the public view's fields); keys here: {', '.join(known) or 'none'}"
                )
        pool = [t for t in pool if all(_matches(t, key, accepted) for key, accepted in filters)]
    if not include_unavailable:
        pool = [t for t in pool if t.unavailable is None]
    return pool

"""Task data: the InterCode sets (loaded from a verified data root), HumanEval, the project's own mini
sets, and users' envs, all read through the task sources their env YAML declares. What is particular
to one env family (MBPP's entry point, CTF's assets) lives in that family's folder under ``envs/``.

See :mod:`intercode_agents.datasets.select` for the selector syntax and
:mod:`intercode_agents.datasets.sources` for the ``tasks`` section of an env YAML.
"""

from intercode_agents.datasets.manifest import INTERCODE_COMMIT
from intercode_agents.datasets.root import resolve_data_root
from intercode_agents.datasets.select import (
    default_splits,
    get_task,
    gold_splits,
    load_tasks,
    select_tasks,
    split_names,
)
from intercode_agents.datasets.task import PublicTask, Task

__all__ = [
    "INTERCODE_COMMIT",
    "PublicTask",
    "Task",
    "default_splits",
    "get_task",
    "gold_splits",
    "load_tasks",
    "resolve_data_root",
    "select_tasks",
    "split_names",
]

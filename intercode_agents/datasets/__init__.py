"""Task data: the InterCode sets (loaded from a verified data root), HumanEval, the project's own mini
sets, and users' envs, all read through the task sources their env YAML declares.

See :mod:`intercode_agents.datasets.select` for the selector syntax and
:mod:`intercode_agents.datasets.sources` for the ``tasks`` section of an env YAML.
"""

from intercode_agents.datasets.ctf import CTF_LOST_ASSETS, ctf_asset_files
from intercode_agents.datasets.manifest import INTERCODE_COMMIT
from intercode_agents.datasets.mbpp import entry_point
from intercode_agents.datasets.root import resolve_data_root
from intercode_agents.datasets.select import (
    default_splits,
    get_task,
    gold_splits,
    load_tasks,
    select_tasks,
    split_names,
)
from intercode_agents.datasets.sources import mini_dir
from intercode_agents.datasets.task import PublicTask, Task

__all__ = [
    "CTF_LOST_ASSETS",
    "INTERCODE_COMMIT",
    "PublicTask",
    "Task",
    "ctf_asset_files",
    "default_splits",
    "entry_point",
    "get_task",
    "gold_splits",
    "load_tasks",
    "mini_dir",
    "resolve_data_root",
    "select_tasks",
    "split_names",
]

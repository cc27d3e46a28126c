"""Task data: the InterCode sets (loaded from a verified data root) and the project's own mini sets.

See :mod:`intercode_agents.datasets.select` for the selector syntax.
"""

from intercode_agents.datasets.ctf import ctf_asset_files
from intercode_agents.datasets.loaders import CTF_LOST_ASSETS, DEFAULT_SPLITS, mini_dir
from intercode_agents.datasets.manifest import INTERCODE_COMMIT
from intercode_agents.datasets.mbpp import entry_point
from intercode_agents.datasets.root import resolve_data_root
from intercode_agents.datasets.select import get_task, load_tasks, select_tasks, split_names
from intercode_agents.datasets.task import ENV_NAMES, Task

__all__ = [
    "CTF_LOST_ASSETS",
    "DEFAULT_SPLITS",
    "ENV_NAMES",
    "INTERCODE_COMMIT",
    "Task",
    "ctf_asset_files",
    "entry_point",
    "get_task",
    "load_tasks",
    "mini_dir",
    "resolve_data_root",
    "select_tasks",
    "split_names",
]

"""SkyRL-gym environments over our envs: importing this module registers their ids.

``import intercode_agents.integrations.skyrl`` registers ``intercode-<name>`` for every env known in
the process (``intercode-bash``, ``intercode-sql``, ``intercode-python``, ``intercode-ctf``, the envs
of installed packages and the user envs already loaded); :func:`register` adds a user's env YAML
later. Then ``skyrl_gym.make("intercode-bash", env_config={}, extras={"task_id": "bash/mini/0"})``
gives an env (:class:`~intercode_agents.integrations.skyrl.env.IntercodeTextEnv`). Registration lives
in the process that runs SkyRL's generator: import this module at the top of the Ray task that
starts training (SkyRL's examples register their envs there too). :func:`dataset_rows` writes the
rows of a SkyRL prompt dataset for a task selection.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import skyrl_gym

from intercode_agents.datasets import select_tasks
from intercode_agents.integrations.skyrl.env import IntercodeTextEnv
from intercode_agents.spec import env_names, load_spec

PREFIX = "intercode-"


def register(env: str | Path) -> str:
    """Register the SkyRL-gym id of ``env`` (a name, or the path of an env YAML, which then becomes
    known by its name) and return it: ``intercode-<name>``. Registering again is harmless."""
    spec = load_spec(env)
    env_id = f"{PREFIX}{spec.name}"
    if env_id not in skyrl_gym.registry:
        target = spec.name if str(env) == spec.name else str(spec.path)  # (a path works in any process)
        skyrl_gym.register(id=env_id, entry_point=functools.partial(IntercodeTextEnv, env=target))
    return env_id


def dataset_rows(env: str | Path, selector: str | None = None) -> list[dict[str, Any]]:
    """Rows of a SkyRL prompt dataset, one per selected task: ``env_class`` (the registered id),
    ``task_id`` (the env reads it from the row's extras) and a ``prompt`` whose user message is a
    placeholder: ``init`` returns the task's own conversation. Write them with ``datasets`` or pandas
    to the parquet file SkyRL reads."""
    env_id = register(env)
    return [
        {"prompt": [{"role": "user", "content": task.id}], "env_class": env_id, "task_id": task.id}
        for task in select_tasks(env, selector)
    ]


for _name in env_names():
    register(_name)

__all__ = ["PREFIX", "IntercodeTextEnv", "dataset_rows", "register"]

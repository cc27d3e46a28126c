"""Checks before a run starts, so a dead engine or a missing image is one clear error, not N env_errors."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

import aiodocker

from intercode_agents.datasets import Task
from intercode_agents.envs.registry import env_class
from intercode_agents.errors import ImageMissing
from intercode_agents.images import image_ref
from intercode_agents.sandbox import check_engine
from intercode_agents.sandbox.engine import docker_client, engine_call


async def image_ids(tasks: Iterable[Task], *, execution: str = "session") -> dict[str, str]:
    """Check the engine answers and every task's image is built; return short name -> image id.

    An execution mode may run tasks on other images (Bash's paper execution on the paper variants):
    those are checked, and their ids returned under the tasks' image names."""
    await check_engine()
    client = docker_client()
    ids: dict[str, str] = {}
    for env_name, name in sorted({(task.env, task.image) for task in tasks}):
        ref = image_ref(env_class(env_name).image_for(name, execution))
        try:
            info = await engine_call(lambda ref=ref: client.images.inspect(ref), image=ref)
        except aiodocker.DockerError as exc:
            if exc.status == 404:
                raise ImageMissing(ref) from exc
            raise
        ids[name] = str(info.get("Id") or ref)
    return ids


async def load_local_model(model: object) -> None:
    """Load a local model's weights now (a missing file is then one error before any episode runs)."""
    from intercode_agents.models import LocalChatModel

    if isinstance(model, LocalChatModel):
        await asyncio.to_thread(model.load)

"""Checks before a run starts, so a dead engine or a missing image is one clear error, not N env_errors."""

from __future__ import annotations

import asyncio
import os
import shlex
from collections.abc import Iterable

import aiodocker

from intercode_agents.datasets import Task
from intercode_agents.errors import ImageMissing
from intercode_agents.images import image_ref
from intercode_agents.images.catalog import TAG_ENV
from intercode_agents.sandbox import check_engine
from intercode_agents.sandbox.engine import docker_client, engine_call


def build_command(env: str, image: str) -> str | None:
    """The command that builds ``image`` when an env YAML of the user's declares it (None for ours)."""
    from intercode_agents.envs.registry import load_spec

    spec = load_spec(env)
    if image not in spec.images:
        return None
    tag = os.environ.get(TAG_ENV)
    prefix = f"{TAG_ENV}={tag} " if tag else ""
    return f"{prefix}intercode-agents images build --env {shlex.quote(str(spec.path))}"


async def image_ids(tasks: Iterable[Task]) -> dict[str, str]:
    """Check the engine answers and every task's image is built; return short name -> image id."""
    await check_engine()
    client = docker_client()
    ids: dict[str, str] = {}
    envs = {task.image: task.env for task in tasks}
    for name in sorted(envs):
        ref = image_ref(name)
        try:
            info = await engine_call(lambda ref=ref: client.images.inspect(ref), image=ref)
        except ImageMissing as exc:
            raise ImageMissing(ref, build_command(envs[name], name)) from exc
        except aiodocker.DockerError as exc:
            if exc.status == 404:
                raise ImageMissing(ref, build_command(envs[name], name)) from exc
            raise
        ids[name] = str(info.get("Id") or ref)
    return ids


async def load_local_model(model: object) -> None:
    """Load a local model's weights now (a missing file is then one error before any episode runs)."""
    from intercode_agents.models import LocalChatModel

    if isinstance(model, LocalChatModel):
        await asyncio.to_thread(model.load)

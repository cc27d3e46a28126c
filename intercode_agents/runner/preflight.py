"""Checks before a run starts, so a dead engine or a missing image is one clear error, not N env_errors."""

from __future__ import annotations

import asyncio
import os
import shlex
from collections.abc import Iterable

from intercode_agents.datasets import Task
from intercode_agents.envs.registry import env_class
from intercode_agents.errors import EngineUnavailable, ImageMissing
from intercode_agents.images import image_ref
from intercode_agents.images.catalog import TAG_ENV
from intercode_agents.sandbox import EngineSet, resolve_engines


def build_command(env: str, image: str) -> str | None:
    """The command that builds ``image`` when an env YAML of the user's declares it (None for ours)."""
    from intercode_agents.spec import load_spec

    spec = load_spec(env)
    if image not in spec.images:
        return None
    tag = os.environ.get(TAG_ENV)
    prefix = f"{TAG_ENV}={tag} " if tag else ""
    return f"{prefix}intercode-agents images build --env {shlex.quote(str(spec.path))}"


async def image_ids(
    tasks: Iterable[Task], *, execution: str = "session", engines: EngineSet | None = None
) -> dict[str, str]:
    """Check every engine answers and holds every task's image; return short name -> image id (the
    first engine's: images loaded from one engine into another keep their IDs).

    An execution mode may run tasks on other images (Bash's paper execution on the paper variants):
    those are checked, and their ids returned under the tasks' image names."""
    engines = engines or resolve_engines()
    pairs = sorted({(task.env, task.image) for task in tasks})
    ids: dict[str, str] = {}
    for backend in engines.backends:
        try:
            await backend.ping()
        except EngineUnavailable as exc:
            raise EngineUnavailable(f"engine {backend.name}: {exc}") from exc
        for env_name, name in pairs:
            ref = image_ref(env_class(env_name).image_for(name, execution))
            info = await backend.image(ref)
            if info is None:
                several = len(engines) > 1
                raise ImageMissing(
                    ref, backend.name if several else None, None if several else build_command(env_name, name)
                )
            ids.setdefault(name, info.id)
    return ids


async def load_local_model(model: object) -> None:
    """Load a local model's weights now (a missing file is then one error before any episode runs)."""
    from intercode_agents.models import LocalChatModel

    if isinstance(model, LocalChatModel):
        await asyncio.to_thread(model.load)

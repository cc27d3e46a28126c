"""Sandboxes alive in this process, and clean-up on exit, on signals and after a crash, on every engine.

``Sandbox`` registers every sandbox it creates, with its backend. Normal exits and task cancellation
remove them through ``async with``; :func:`install_signal_handlers` turns SIGTERM into the same
orderly path as Ctrl-C; an ``atexit`` hook removes whatever is still registered when the interpreter
ends, on each backend; and :func:`cleanup_containers` (the ``cleanup`` command) removes labelled
sandboxes whose process died (a SIGKILL leaves them behind) on the backends it is given.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import signal
from collections.abc import Iterable

from intercode_agents.errors import EngineUnavailable
from intercode_agents.sandbox.config import LABEL, LABEL_PID, LABEL_RUN, RUN_ID
from intercode_agents.sandbox.contract import Backend

_live: dict[Backend, set[str]] = {}
_created_on: set[Backend] = set()  # a create was sent: the exit hook asks these engines for ours


def creating(backend: Backend) -> None:
    """Say a create request is about to go out to ``backend`` (its answer may be lost to a cancel)."""
    _created_on.add(backend)


def register(backend: Backend, sandbox_id: str) -> None:
    _live.setdefault(backend, set()).add(sandbox_id)


def unregister(backend: Backend, sandbox_id: str) -> None:
    _live.get(backend, set()).discard(sandbox_id)


def live() -> set[str]:
    return {sandbox_id for ids in _live.values() for sandbox_id in ids}


async def remove(backend: Backend, sandbox_id: str) -> None:
    """Remove a sandbox, and forget it once it is gone."""
    await backend.remove(sandbox_id)
    unregister(backend, sandbox_id)


_removals: set[asyncio.Task[None]] = set()


def remove_when_created(backend: Backend, create: asyncio.Future[str]) -> None:
    """Remove the sandbox of a create whose caller was cancelled (registered meanwhile, so the
    exit hook removes it if the loop ends first)."""
    if create.cancelled() or create.exception() is not None:
        return
    sandbox_id = create.result()
    register(backend, sandbox_id)
    task = asyncio.get_running_loop().create_task(remove(backend, sandbox_id))
    _removals.add(task)
    task.add_done_callback(_removals.discard)


@atexit.register
def _remove_leftovers() -> None:
    """Remove what this process still holds on each engine: the registered sandboxes, and any
    labelled with this process's run and PID (a create whose answer was lost to a cancellation)."""
    mine = {LABEL_RUN: RUN_ID, LABEL_PID: str(os.getpid())}
    for backend in {*_live, *_created_on}:
        ids = _live.get(backend, set())
        if not ids and backend not in _created_on:
            continue
        try:
            backend.remove_now(set(ids), mine)
        except Exception:
            pass
        ids.clear()


def install_signal_handlers() -> None:
    """Make SIGTERM behave like Ctrl-C, so asyncio cancels tasks and sandboxes are removed."""
    signal.signal(signal.SIGTERM, signal.default_int_handler)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def cleanup_containers(
    *, include_live_runs: bool = False, backends: Iterable[Backend] | None = None, run_id: str | None = None
) -> int:
    """Remove project-labelled sandboxes that outlived their process, on each of ``backends`` (by
    default the process's default backend), only those of the run ``run_id`` when it is given (a
    run directory's ``sandbox_run_id``). Return how many were removed.

    Sandboxes whose creating process is still alive on this host are kept unless
    ``include_live_runs`` is set (so a cleanup never pulls the rug from a running eval). An engine
    that does not answer raises EngineUnavailable, after the others were cleaned.
    """
    from intercode_agents.sandbox.backends import default_backend

    removed = 0
    me = os.getpid()
    mine = live()  # (by ID, whichever view of its engine a sandbox was registered with)
    down: list[str] = []
    for backend in list(backends) if backends is not None else [default_backend()]:
        try:
            found = backend.leftovers_now({LABEL: "1"} | ({LABEL_RUN: run_id} if run_id else {}))
        except EngineUnavailable as exc:
            down.append(f"{backend.name}: {exc}")
            continue
        victims = []
        for c in found:
            pid_label = c.labels.get(LABEL_PID, "")
            pid = int(pid_label) if pid_label.isdigit() else 0
            if not include_live_runs and pid and pid != me and _pid_alive(pid):
                continue
            if pid == me and c.id in mine and not include_live_runs:
                continue
            victims.append(c.id)
        removed += backend.remove_now(victims)
    if down:
        raise EngineUnavailable("; ".join(down))
    return removed

"""Containers alive in this process, and clean-up on exit, on signals and after a crash.

``Sandbox`` registers every container it creates. Normal exits and task cancellation remove them
through ``async with``; :func:`install_signal_handlers` turns SIGTERM into the same orderly path as
Ctrl-C; an ``atexit`` hook removes whatever is still registered when the interpreter ends; and
:func:`cleanup_containers` (the ``cleanup`` command) removes labelled containers whose process died
(a SIGKILL leaves them behind).
"""

from __future__ import annotations

import atexit
import os
import signal
from typing import Any

from intercode_agents.sandbox.config import LABEL, LABEL_PID, LABEL_RUN, RUN_ID

_live: set[str] = set()
_created_any = False  # a create was sent: the exit hook asks the engine for this process's containers


def creating() -> None:
    """Say a create request is about to go out (its answer may be lost to a cancellation)."""
    global _created_any
    _created_any = True


def register(container_id: str) -> None:
    _live.add(container_id)


def unregister(container_id: str) -> None:
    _live.discard(container_id)


def live() -> set[str]:
    return set(_live)


def _sync_client() -> Any:
    import docker

    return docker.from_env(timeout=30)


@atexit.register
def _remove_leftovers() -> None:
    """Remove what this process still holds: the registered containers, and any container labelled
    with this process's run and PID (a create whose answer was lost to a cancellation)."""
    if not _live and not _created_any:
        return
    try:
        client = _sync_client()
        mine = client.api.containers(
            all=True, filters={"label": [f"{LABEL_RUN}={RUN_ID}", f"{LABEL_PID}={os.getpid()}"]}
        )
        for cid in {*_live, *(c["Id"] for c in mine)}:
            try:
                client.api.remove_container(cid, force=True, v=True)
            except Exception:
                pass
            _live.discard(cid)
    except Exception:
        pass


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


def cleanup_containers(*, include_live_runs: bool = False) -> int:
    """Remove project-labelled containers that outlived their process. Return how many were removed.

    Containers whose creating process is still alive on this host are kept unless
    ``include_live_runs`` is set (so a cleanup never pulls the rug from a running eval).
    """
    from intercode_agents.errors import EngineUnavailable

    try:
        client = _sync_client()
        containers = client.api.containers(all=True, filters={"label": f"{LABEL}=1"})
    except Exception as exc:  # docker-py raises DockerException subclasses on a dead engine
        raise EngineUnavailable(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from exc
    removed = 0
    me = os.getpid()
    for c in containers:
        pid_label = (c.get("Labels") or {}).get(LABEL_PID, "")
        pid = int(pid_label) if pid_label.isdigit() else 0
        if not include_live_runs and pid and pid != me and _pid_alive(pid):
            continue
        if pid == me and c["Id"] in _live and not include_live_runs:
            continue
        try:
            client.api.remove_container(c["Id"], force=True, v=True)
            removed += 1
        except Exception:
            pass
    return removed

"""Small helpers the tests share to look at the engine from the outside."""

from __future__ import annotations

import subprocess

from intercode_agents.sandbox import Backend
from intercode_agents.sandbox.config import LABEL_RUN

SLEEPER = ["sleep", "infinity"]


def containers_of_run(run_id: str, backend: Backend | None = None) -> list[str]:
    """IDs of the containers (running or not) labelled with ``run_id``: on the main engine, asked
    with the docker CLI, or on ``backend``, asked through it."""
    if backend is not None:
        return sorted(c.id for c in backend.leftovers_now({LABEL_RUN: run_id}))
    out = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=intercode-agents.run={run_id}"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.split()

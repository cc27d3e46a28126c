"""Small helpers the tests share to look at the engine from the outside."""

from __future__ import annotations

import subprocess

from intercode_agents.sandbox import Backend
from intercode_agents.sandbox.conformance import fixtures
from intercode_agents.sandbox.conformance.fixtures import SLEEPER

__all__ = ["SLEEPER", "containers_of_run"]


def containers_of_run(run_id: str, backend: Backend | None = None) -> list[str]:
    """IDs of the containers (running or not) labelled with ``run_id``: on the main engine, asked
    with the docker CLI, or on ``backend``, asked through it."""
    if backend is not None:
        return fixtures.containers_of_run(run_id, backend)
    out = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=intercode-agents.run={run_id}"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.split()

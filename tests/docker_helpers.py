"""Small helpers the tests share to look at the engine from the outside."""

from __future__ import annotations

import subprocess

SLEEPER = ["sleep", "infinity"]


def containers_of_run(run_id: str) -> list[str]:
    """IDs of the containers (running or not) labelled with ``run_id``."""
    out = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=intercode-agents.run={run_id}"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.split()

"""Removing a run's containers on every node of a Ray cluster, at the run's end and after a crash.

Each function here runs *on a node*, as a Ray task pinned there (node affinity), and reaches only
that node's engines (its ``$INTERCODE_ENGINES``, else its local Docker engine), the way the node's
actor does. The labels are the sandbox layer's (:mod:`intercode_agents.sandbox.config`): every
container carries the project's label, its run's ID and the PID of the process that made it.

- :func:`sweep_run` removes every container of one run, whoever made it: the driver calls it on
  every node once the run's actors are gone, so nothing of the run survives on a node that answers,
  not even what an actor lost with its node left behind (a node that comes back under a new node ID
  is swept too).
- :func:`clean_node` is ``intercode-agents cleanup --ray``: on every node, what
  :func:`~intercode_agents.sandbox.cleanup.cleanup_containers` removes on one machine, the containers
  whose maker is gone (a driver that crashed takes its actors with it: Ray ends them within a moment,
  so their containers are then found), or all of them with ``--all``.
"""

from __future__ import annotations

import socket
from typing import Any

from intercode_agents.errors import EngineUnavailable
from intercode_agents.sandbox import resolve_engines
from intercode_agents.sandbox.cleanup import cleanup_containers
from intercode_agents.sandbox.config import LABEL_RUN


def sweep_run(run_id: str) -> dict[str, Any]:
    """Remove every container of the run ``run_id`` from this node's engines."""
    removed, problems = 0, []
    for backend in resolve_engines(None).backends:
        try:
            found = backend.leftovers_now({LABEL_RUN: run_id})
            removed += backend.remove_now([c.id for c in found])
        except EngineUnavailable as exc:
            problems.append(f"{backend.name}: {exc}")
    return {"host": socket.gethostname(), "removed": removed, "error": "; ".join(problems) or None}


def clean_node(include_live_runs: bool, run_id: str | None = None) -> dict[str, Any]:
    """``intercode-agents cleanup`` on this node's engines (of one run, with ``run_id``)."""
    try:
        removed = cleanup_containers(
            include_live_runs=include_live_runs, backends=resolve_engines(None).backends, run_id=run_id
        )
    except EngineUnavailable as exc:
        return {"host": socket.gethostname(), "removed": 0, "error": str(exc)}
    return {"host": socket.gethostname(), "removed": removed, "error": None}

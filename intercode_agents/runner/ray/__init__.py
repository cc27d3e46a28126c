"""Runs on a Ray cluster: the nodes own their engines, the driver owns the run directory.

- :mod:`.node`: :class:`NodeActor`, one per node offering ``intercode_slots``; it plays a run's
  episodes on its node's engines and offers step-level episode calls to a trainer's workers.
- :mod:`.driver`: :class:`RayRun` (:func:`open_ray`), which starts the actors, feeds them the run's
  queue of episodes, replays what a lost node had in flight, and removes the run's containers.
- :mod:`.cleanup`: the clean-up that runs on each node (the run's end, ``cleanup --ray``).

Install with ``pip install 'intercode-agents[ray]'``. Nothing imports Ray until a run asks for it
(``--ray``, ``EvalConfig(ray=...)``); this package's names are imported on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from intercode_agents.runner.ray.cleanup import clean_node, sweep_run
    from intercode_agents.runner.ray.driver import SLOTS, RayRun, open_ray
    from intercode_agents.runner.ray.node import NodeActor, Setup

_LAZY = {
    "NodeActor": "node",
    "Setup": "node",
    "RayRun": "driver",
    "open_ray": "driver",
    "SLOTS": "driver",
    "clean_node": "cleanup",
    "sweep_run": "cleanup",
    "clean_cluster": "driver",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"intercode_agents.runner.ray.{_LAZY[name]}"), name)
    raise AttributeError(name)


__all__ = ["SLOTS", "NodeActor", "RayRun", "Setup", "clean_node", "open_ray", "sweep_run"]

"""The runner: many episodes concurrently, recorded, resumable; gold replays and replays of records.

``run_eval`` (:mod:`.eval`), ``run_gold`` (:mod:`.gold`) and ``replay_file`` (:mod:`.replay`) are
imported lazily, so ``metrics`` and ``report`` stay light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from intercode_agents.runner.config import EpisodeBudgets, EvalConfig
    from intercode_agents.runner.eval import EvalResult, run_eval
    from intercode_agents.runner.gold import GoldReport, run_gold
    from intercode_agents.runner.replay import ReplayReport, replay_file

_LAZY = {
    "EvalConfig": "config",
    "EpisodeBudgets": "config",
    "EvalResult": "eval",
    "run_eval": "eval",
    "GoldReport": "gold",
    "run_gold": "gold",
    "ReplayReport": "replay",
    "replay_file": "replay",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"intercode_agents.runner.{_LAZY[name]}"), name)
    raise AttributeError(name)


__all__ = [
    "EpisodeBudgets",
    "EvalConfig",
    "EvalResult",
    "GoldReport",
    "ReplayReport",
    "replay_file",
    "run_eval",
    "run_gold",
]

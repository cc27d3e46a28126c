"""The run-wide cost cap (``--max-cost``): what a run has spent, and whether another episode may start.

The spend is the estimated cost of every counted record of the run directory (earlier sessions
included), each with its retried attempts (:func:`~intercode_agents.metrics.summary.episode_cost`);
a record played again (``--resume --retry-errors``) replaces the one it supersedes, whose cost it
carries in its ``retries``. Once the spend reaches the cap no new episode starts: the episodes in
flight finish and are recorded, and the run stops cleanly, resumable with a higher cap. So a run
overshoots its cap by at most the episodes in flight (``--max-cost-per-episode`` bounds each).
"""

from __future__ import annotations

from intercode_agents.metrics.summary import episode_cost
from intercode_agents.models.pricing import load_prices
from intercode_agents.runner.run_records import EpisodeKey, episode_key
from intercode_agents.trajectory import Trajectory


class RunSpend:
    """The estimated USD a run has spent, against its cap (None: no cap)."""

    def __init__(self, cap_usd: float | None, records: list[Trajectory]) -> None:
        self.cap_usd = cap_usd
        self._prices = load_prices()
        self._costs: dict[EpisodeKey, float] = {}
        for traj in records:
            self.add(traj)

    def add(self, traj: Trajectory) -> None:
        cost = episode_cost(traj, self._prices)
        self._costs[episode_key(traj)] = cost or 0.0  # an unknown price cannot pass a cap check: see eval

    @property
    def spent_usd(self) -> float:
        return sum(self._costs.values())

    @property
    def reached(self) -> bool:
        return self.cap_usd is not None and self.spent_usd >= self.cap_usd

    def allows_more(self) -> bool:
        """Whether another episode may start."""
        return not self.reached

    def stop_note(self, not_run: int) -> str:
        return (
            f"the run's cost cap of ${self.cap_usd:.4f} is reached (${self.spent_usd:.4f} spent); "
            f"{not_run} planned episode(s) not run: resume with a higher --max-cost to play them"
        )

"""An episode's budgets besides its turns: tokens, cost and seconds.

Each is checked before every model call of the episode (the seconds also by the episode's deadline,
which interrupts whatever runs), so the call that crosses a line completes and its action is carried
out, and the next call is refused: the episode then ends with an outcome of its own
(``tokens_exhausted``, ``cost_exhausted``, ``timeout``), a failure of the agent that is never
excluded from the rates (see :mod:`intercode_agents.trajectory`). Tokens are input plus output tokens
as the model reports them; cost is estimated from the price table
(:mod:`intercode_agents.models.pricing`), so a cost budget needs a model the table knows.

With ``show_budget`` the model reads what is left after each observation, e.g.
``[budget left: 3 turns, 1,200 tokens, 41 s, $0.0120]``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from intercode_agents.errors import ConfigError, IntercodeError
from intercode_agents.models.pricing import PRICES_ENV_VAR, Price, load_prices
from intercode_agents.trajectory import Outcome, Trajectory


class BudgetExhausted(IntercodeError):
    """A budget of the episode is spent; ``outcome`` is the trajectory's outcome that says which."""

    def __init__(self, outcome: Outcome, message: str) -> None:
        super().__init__(message)
        self.outcome: Outcome = outcome


def price_of(model: str) -> Price:
    """The price of ``model`` for a cost budget; ConfigError when the table does not know it."""
    price = load_prices().lookup(model)
    if price is None:
        raise ConfigError(
            f"a cost budget needs the price of model {model!r}, which the price table does not know: "
            f"add it to a copy of the table and point ${PRICES_ENV_VAR} at it"
        )
    return price


@dataclass
class EpisodeBudget:
    """The token, cost and time budgets of one episode (None: unlimited)."""

    max_tokens: int | None = None
    max_cost_usd: float | None = None
    max_seconds: float | None = None
    price: Price | None = None  # needed when max_cost_usd is set
    started: float = field(default_factory=time.perf_counter)

    def __post_init__(self) -> None:
        if self.max_cost_usd is not None and self.price is None:
            raise ConfigError("a cost budget needs the model's price")

    @staticmethod
    def tokens(trajectory: Trajectory) -> int:
        return trajectory.input_tokens + trajectory.output_tokens

    def cost(self, trajectory: Trajectory) -> float | None:
        if self.price is None:
            return None
        return (
            trajectory.input_tokens * self.price.input_per_million
            + trajectory.output_tokens * self.price.output_per_million
        ) / 1_000_000

    def seconds_left(self) -> float | None:
        if self.max_seconds is None:
            return None
        return max(self.max_seconds - (time.perf_counter() - self.started), 0.0)

    def check(self, trajectory: Trajectory) -> None:
        """Raise :class:`BudgetExhausted` when no further model call is allowed."""
        tokens = self.tokens(trajectory)
        if self.max_tokens is not None and tokens >= self.max_tokens:
            raise BudgetExhausted(
                "tokens_exhausted", f"the episode used {tokens:,} of its {self.max_tokens:,} tokens"
            )
        cost = self.cost(trajectory)
        if self.max_cost_usd is not None and cost is not None and cost >= self.max_cost_usd:
            raise BudgetExhausted(
                "cost_exhausted", f"the episode cost ${cost:.4f} of its ${self.max_cost_usd:.4f}"
            )

    def note(self, trajectory: Trajectory, turns_left: int | None) -> str:
        """What is left, for the model: ``budget left: 3 turns, 1,200 tokens, 41 s, $0.0120``."""
        parts = [] if turns_left is None else [f"{turns_left} turn{'s' if turns_left != 1 else ''}"]
        if self.max_tokens is not None:
            parts.append(f"{max(self.max_tokens - self.tokens(trajectory), 0):,} tokens")
        seconds = self.seconds_left()
        if seconds is not None:
            parts.append(f"{seconds:.0f} s")
        cost = self.cost(trajectory)
        if self.max_cost_usd is not None and cost is not None:
            parts.append(f"${max(self.max_cost_usd - cost, 0.0):.4f}")
        return "budget left: " + ", ".join(parts)

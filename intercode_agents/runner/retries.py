"""Bounded retries of episodes that ended in an env or model error (the harness's or the provider's
fault, never the agent's).

A retried episode is played again from a fresh reset; only its last attempt is recorded, with the
earlier ones in ``Trajectory.retries`` (outcome, error, tokens, cost). Defaults:

- ``env_error``: 2 retries. The sandbox layer already retries single Engine API calls, so an error
  that ends an episode is a stickier hiccup: a container that failed to start under load, a dropped
  exec stream, dockerd busy for a few seconds. Two more attempts, 1 s and 2 s apart, ride those out;
  a persistent fault (a broken task, a dead engine) costs only three quick failures before the episode
  is recorded, excluded and listed.
- ``model_error``: 0 retries. Each model call is already retried with backoff inside the episode
  (``StrategyConfig.model_retries``), and an episode retry pays for every token of the episode again,
  so it is the user's choice (``--retry-errors N`` sets both bounds to N).

An agent cannot earn a retry: an episode whose sandbox the agent destroyed is ``failed``, not an env
error (the envs report ``sandbox_lost`` instead of raising), and timeouts are the agent's too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from intercode_agents.errors import ConfigError
from intercode_agents.trajectory import FailedAttempt, Trajectory

DEFAULT_ENV_ERROR_RETRIES = 2
DEFAULT_MODEL_ERROR_RETRIES = 0


@dataclass(frozen=True)
class RetryPolicy:
    """How many times an episode ending in each retryable outcome is played again."""

    env_error: int = DEFAULT_ENV_ERROR_RETRIES
    model_error: int = DEFAULT_MODEL_ERROR_RETRIES
    wait_s: float = 1.0  # before the first retry; doubles for each further one
    max_wait_s: float = 8.0

    def __post_init__(self) -> None:
        for name in ("env_error", "model_error"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(f"retries of {name} must be a whole number >= 0, got {value!r}")
        if self.wait_s < 0 or self.max_wait_s < 0:
            raise ConfigError("retry waits must be >= 0 seconds")

    @classmethod
    def from_option(cls, retry_errors: int | None, *, wait_s: float = 1.0) -> RetryPolicy:
        """``--retry-errors N``: N for both outcomes; None keeps the defaults."""
        if retry_errors is None:
            return cls(wait_s=wait_s)
        if isinstance(retry_errors, bool) or not isinstance(retry_errors, int) or retry_errors < 0:
            raise ConfigError(f"--retry-errors must be a whole number >= 0, got {retry_errors!r}")
        return cls(env_error=retry_errors, model_error=retry_errors, wait_s=wait_s)

    def limit(self, outcome: str) -> int:
        """Retries allowed for an episode that ended in ``outcome`` (0 for the agent's own outcomes)."""
        if outcome == "env_error":
            return self.env_error
        if outcome == "model_error":
            return self.model_error
        return 0

    def wait(self, retry: int) -> float:
        """Seconds to wait before retry number ``retry`` (1-based)."""
        return min(self.wait_s * 2 ** (retry - 1), self.max_wait_s)

    def to_json(self) -> dict[str, float | int]:
        return {"env_error": self.env_error, "model_error": self.model_error}


NO_RETRIES = RetryPolicy(env_error=0, model_error=0)


async def play_with_retries(
    play: Callable[[], Awaitable[Trajectory]],
    policy: RetryPolicy,
    earlier: Sequence[FailedAttempt] = (),
) -> Trajectory:
    """Play an episode until it ends in an outcome the policy does not retry, or the bound is spent.

    ``earlier`` are the failed attempts recorded before (a resumed run re-playing a recorded error);
    they count in ``Trajectory.retries`` but not against this call's bound.
    """
    failed = list(earlier)
    retries = 0
    while True:
        traj = await play()
        if retries >= policy.limit(traj.outcome):
            traj.retries = [*failed, *traj.retries]
            return traj
        failed.append(FailedAttempt.of(traj))
        retries += 1
        await asyncio.sleep(policy.wait(retries))

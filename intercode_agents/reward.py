"""The value every reward function returns, and the two reward modes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from intercode_agents.errors import ConfigError

RewardMode = Literal["intercode", "strict"]
REWARD_MODES: tuple[RewardMode, ...] = ("intercode", "strict")

PartValue = float | int | str | bool | None


@dataclass(frozen=True)
class RewardResult:
    """A reward and the parts it was made of, so users see why a score is what it is."""

    reward: float
    parts: dict[str, PartValue] = field(default_factory=dict)
    corrupt: bool = False  # the gold itself fails: unscored, never a free win
    note: str | None = None


def check_mode(mode: str) -> RewardMode:
    """Validate a reward mode name."""
    if mode == "intercode":
        return "intercode"
    if mode == "strict":
        return "strict"
    raise ConfigError(f"unknown reward mode {mode!r}; choose one of {', '.join(REWARD_MODES)}")

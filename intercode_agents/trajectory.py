"""The trajectory record: one JSON line per finished episode.

Strategies build a :class:`Trajectory`; the runner appends it to ``trajectories.jsonl``; metrics,
reports and replay read it back. The schema is the contract between those layers.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

Outcome = Literal["solved", "failed", "env_error", "timeout", "model_error"]
StepKind = Literal["action", "submit", "invalid"]


class Step(BaseModel):
    """One agent turn: the action sent to the environment and what came back."""

    turn: int
    kind: StepKind = "action"
    action: str
    observation: str = ""  # as the model saw it (truncated)
    exit_code: int | None = None
    errored: bool = False  # the action failed to run (non-zero exit, SQL error, exception, invalid)
    reward: float | None = None  # set where the strategy scores each step (try_again) and at submit
    duration_s: float = 0.0
    observation_truncated: bool = False  # cut for the model's context
    output_truncated: bool = False  # cut at the sandbox's capture cap
    timed_out: bool = False
    thought: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0


class Trajectory(BaseModel):
    """A finished (or failed) episode, self-contained enough to score, report and replay."""

    task_id: str
    env: str
    strategy: str
    model: str
    model_settings: dict[str, Any] = Field(default_factory=dict)
    seed: int | None = None
    image_id: str | None = None
    reward_mode: str = "intercode"
    execution: str = "session"  # how actions ran: "session", or "paper" (Bash/CTF, as the original ran them)
    group: dict[str, str] = Field(default_factory=dict)  # paper groups: fs, hardness, db, tag
    context: dict[str, Any] = Field(default_factory=dict)  # observation limit, history window, turns
    steps: list[Step] = Field(default_factory=list)
    reward: float | None = None
    reward_parts: dict[str, Any] = Field(default_factory=dict)
    outcome: Outcome = "failed"
    error: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    started_at: float = 0.0
    duration_s: float = 0.0

    @property
    def turns(self) -> int:
        return len(self.steps)

    @property
    def solved(self) -> bool:
        return self.outcome == "solved"

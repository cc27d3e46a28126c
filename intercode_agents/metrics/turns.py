"""Which steps of a record are turns, actions and submits: the counting every metric shares.

A bare ``submit`` shares the turn of the step before it (it scores the last output), a model message
that called no tool runs nothing and uses no turn, and rollbacks, vetoed submits and the scores an
agent asked for are not actions. Older records may say a step was a submit only in its action text.
"""

from __future__ import annotations

import re

from intercode_agents.trajectory import GUARD_KINDS, Step, Trajectory, is_full

_SUBMIT_WORD = re.compile(r"\s*submit\b", re.IGNORECASE)
_BARE_SUBMIT = re.compile(r"\W*(?:submit)?\W*", re.IGNORECASE)


def is_submit(step: Step) -> bool:
    """A submit step (older records may only say so in the action); a submit the critic sent back
    (kind "vetoed"), a refusal and a rollback are not."""
    if step.kind in GUARD_KINDS:
        return False
    return step.kind == "submit" or _SUBMIT_WORD.match(step.action) is not None


def is_bare_submit(step: Step) -> bool:
    """A submit that carries no answer of its own (``submit``, ``submit()``): it scores the last output."""
    return is_submit(step) and _BARE_SUBMIT.fullmatch(step.action) is not None


def is_message(step: Step) -> bool:
    """A model message that called no tool: it ran nothing and used no turn."""
    return step.kind == "message"


def actions_of(traj: Trajectory) -> list[Step]:
    """The agent's actions: every step but submits, model messages, rollbacks, submits the critic
    sent back and scores the agent asked for (an action the guard refused is one)."""
    return [
        step
        for step in traj.steps
        if not is_submit(step)
        and not is_message(step)
        and step.kind not in ("rollback", "vetoed", "evaluate")
    ]


def turn_numbers(traj: Trajectory) -> list[int]:
    """The turn (1-based) each step belongs to; a bare submit shares the turn of the step before, and a
    model message that called no tool shares it too (0 before the first turn)."""
    numbers: list[int] = []
    turn = 0
    for step in traj.steps:
        if not is_message(step) and (turn == 0 or not is_bare_submit(step)):
            turn += 1
        numbers.append(turn)
    return numbers


def turns_used(traj: Trajectory) -> int:
    numbers = turn_numbers(traj)
    return numbers[-1] if numbers else 0


def solve_turn(traj: Trajectory) -> int | None:
    """The turn on which a solved episode was solved; None for unsolved ones."""
    if not traj.solved:
        return None
    numbers = turn_numbers(traj)
    for step, turn in zip(traj.steps, numbers, strict=True):
        if is_full(step.reward):
            return turn
    return max(1, numbers[-1] if numbers else 1)

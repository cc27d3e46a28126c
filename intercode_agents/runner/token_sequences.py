"""The exact token sequences a trainer learns from, rebuilt from a record's token ids.

With ``record_tokens`` a strategy keeps every model call's prompt ids, completion ids and logprobs
(``Trajectory.turn_tokens``). A multi-turn episode is then one sequence: the first prompt, then each
completion the model wrote, with between them the tokens the harness added (the env's observation in
the strategy's template and the chat template's turn markers). A trainer computes its loss on the
model's tokens only, so :func:`episode_sequence` returns the sequence after the first prompt with a
mask: 1 on every token a completion wrote, 0 on every token the env or the template wrote. This is
the shape RL trainers take for multi-turn rollouts (prompt ids, response ids, a loss mask, the
sampler's logprobs).

It holds only when each call's prompt continues the previous prompt and completion token for token.
A strategy that drops old turns (``history_turns``) or a chat template that rewrites earlier turns
(some drop a model's reasoning) breaks that; :func:`episode_sequence` then raises
:class:`NotAPrefix`, and :func:`turn_samples` gives each call as a sample of its own instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from intercode_agents.errors import IntercodeError
from intercode_agents.trajectory import Trajectory, TurnTokens


class NotAPrefix(IntercodeError):
    """A call's prompt does not continue the tokens before it: the episode is no single sequence."""


@dataclass(frozen=True)
class TokenSequence:
    """One episode as one sequence: ``prompt_ids`` then ``completion_ids``."""

    prompt_ids: list[int]  # the first call's prompt
    completion_ids: list[int]  # everything after it, in order: the model's tokens and the harness's
    completion_mask: list[int]  # 1 where a completion wrote the token, 0 where the env or template did
    logprobs: list[float] | None  # the sampler's logprob of each token (0.0 under mask 0); None if unreported


def _usable(traj: Trajectory) -> list[TurnTokens]:
    if not traj.turn_tokens:
        raise NotAPrefix(
            f"the record of {traj.task_id} holds no token ids (record_tokens was off, or the model "
            "reports none)"
        )
    missing = traj.context.get("calls_without_tokens")
    if missing:
        raise NotAPrefix(
            f"{missing} model call(s) of {traj.task_id} reported no token ids: the record has gaps"
        )
    return traj.turn_tokens


def episode_sequence(traj: Trajectory) -> TokenSequence:
    """The episode's tokens as one masked sequence (see the module docstring)."""
    calls = _usable(traj)
    sequence = list(calls[0].prompt_ids)
    start = len(sequence)
    mask: list[int] = []
    logprobs: list[float] = []
    for number, call in enumerate(calls, start=1):
        if number > 1:
            if call.prompt_ids[: len(sequence)] != sequence:
                raise NotAPrefix(
                    f"call {number} of {traj.task_id} does not continue the tokens before it (a strategy "
                    "that drops old turns, or a chat template that rewrites them): use turn_samples()"
                )
            added = call.prompt_ids[len(sequence) :]
            sequence += added
            mask += [0] * len(added)
            logprobs += [0.0] * len(added)
        sequence += call.completion_ids
        mask += [1] * len(call.completion_ids)
        logprobs += call.logprobs if call.logprobs is not None else [0.0] * len(call.completion_ids)
    reported = all(call.logprobs is not None for call in calls)
    return TokenSequence(sequence[:start], sequence[start:], mask, logprobs if reported else None)


def turn_samples(traj: Trajectory) -> list[TurnTokens]:
    """Each model call of the episode as a sample of its own: its whole prompt, its completion."""
    return list(_usable(traj))

"""The one way an episode becomes a record: every player's steps go through an :class:`EpisodeRecorder`.

Strategies, the gold and replay players, a person at the prompt, the MCP server, ``rescore`` and a
user's agent all play episodes differently, and all of them must leave the same
:class:`~intercode_agents.trajectory.Trajectory`: the question the agent read, one
:class:`~intercode_agents.trajectory.Step` per turn with what the env measured, the score of the
submit and the outcome that follows from it. The recorder turns an env's
:class:`~intercode_agents.envs.steps.StepResult` into a Step (what the model was shown may differ
from the full observation: ``shown``), records steps that never reached the env (a reply with no
action, an agent's message), and settles the outcome at the end.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from intercode_agents.envs.steps import StepResult
from intercode_agents.trajectory import Outcome, Step, StepKind, Trajectory

if TYPE_CHECKING:
    from intercode_agents.envs.base import Env


class EpisodeRecorder:
    """Builds the trajectory of one episode of ``env`` (see the module docstring)."""

    def __init__(
        self,
        env: Env,
        *,
        strategy: str,
        model: str,
        seed: int | None = None,
        epoch: int = 1,
        context: dict[str, Any] | None = None,
        model_settings: dict[str, Any] | None = None,
        trajectory: Trajectory | None = None,
    ) -> None:
        self._clock = time.perf_counter()
        self.trajectory = trajectory or Trajectory(
            task_id=env.task.id if env.task is not None else "",
            env=env.name,
            strategy=strategy,
            model=model,
            model_settings=dict(model_settings or {}),
            epoch=epoch,
            seed=seed,
            reward_mode=env.reward_mode,
            execution=env.execution,
            context=dict(context or {}),
            started_at=time.time(),
        )

    def started(self, question: str, info: dict[str, Any], *, image_id: str | None = None) -> None:
        """The env was reset: the question the agent reads, and the task's groups and image."""
        traj = self.trajectory
        traj.task_id = info.get("task_id", traj.task_id)
        traj.question = question
        traj.group = dict(info.get("group") or {})
        traj.image_id = image_id or info.get("image")

    @property
    def turns(self) -> int:
        return len(self.trajectory.steps)

    def step(
        self,
        result: StepResult,
        action: str,
        *,
        turn: int | None = None,
        shown: str | None = None,
        shown_truncated: bool = False,
        reward: float | None = None,
        thought: str | None = None,
        tokens: tuple[int, int] = (0, 0),
    ) -> Step:
        """Record what the env gave for ``action``; ``shown`` is the observation as the model saw it
        (default: the env's), ``reward`` a score taken after the action (Try Again scores each)."""
        note = result.guard
        step = Step(
            turn=turn if turn is not None else self.turns + 1,
            kind=result.kind,
            action=action,
            observation=result.observation if shown is None else shown,
            exit_code=result.exit_code,
            errored=result.errored,
            reward=result.reward if result.kind == "submit" else reward,
            duration_s=result.duration_s,
            observation_truncated=shown_truncated,
            output_truncated=result.output_truncated,
            timed_out=result.timed_out,
            thought=thought,
            input_tokens=tokens[0],
            output_tokens=tokens[1],
            guard_flags=list(note.flags) if note else [],
            checkpoint=note.checkpoint if note else None,
            rollback=note.rollback if note else None,
            refusal=note.refusal if note else None,
            veto=note.veto if note else None,
            task_files=result.task_files,
        )
        if result.kind == "submit":
            self.scored(result.reward, result.reward_parts)
        return self.add(step)

    def note(
        self,
        kind: StepKind,
        action: str,
        observation: str,
        *,
        turn: int | None = None,
        errored: bool = False,
        thought: str | None = None,
        tokens: tuple[int, int] = (0, 0),
    ) -> Step:
        """Record a turn that never reached the env (a reply with no action, an agent's message)."""
        step = Step(
            turn=turn if turn is not None else self.turns + 1,
            kind=kind,
            action=action,
            observation=observation,
            errored=errored,
            thought=thought,
            input_tokens=tokens[0],
            output_tokens=tokens[1],
        )
        return self.add(step)

    def add(self, step: Step) -> Step:
        self.trajectory.steps.append(step)
        return step

    def scored(self, reward: float, parts: dict[str, Any]) -> None:
        """The submit's score: its reward and parts (``corrupt`` among them when the gold cannot run)."""
        self.trajectory.reward = float(reward)
        self.trajectory.reward_parts = dict(parts)

    def failed(self, outcome: Outcome, error: str) -> None:
        """The episode ended without a score: the harness's, the provider's or a budget's doing."""
        self.trajectory.outcome, self.trajectory.error = outcome, error

    def finish(self, *, settle: bool = True) -> Trajectory:
        """The record, with its outcome settled from the score (unless :meth:`failed` said it)."""
        if settle:
            self.trajectory.settle()
        self.trajectory.duration_s = time.perf_counter() - self._clock
        return self.trajectory

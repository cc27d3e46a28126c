"""What one step of an episode gave, as a typed value, and the one reader of action text.

:meth:`Env.step <intercode_agents.envs.base.Env.step>` runs a command and
:meth:`Env.submit <intercode_agents.envs.base.Env.submit>` ends the episode; both return a
:class:`StepResult`. Nothing below the front ends parses ``"submit ..."`` out of a string: text
becomes a command or a submit only where text comes in (a model's reply, a recorded log, a client's
request, a person at the prompt), through :func:`read_action`. Those who want Gymnasium's 5-tuple get
it from :meth:`StepResult.gym` (or :class:`~intercode_agents.envs.gym.GymView`, which also reads
text).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from intercode_agents.reward import RewardResult
from intercode_agents.trajectory import TaskFiles

#: ``action`` (a command ran), ``submit`` (the episode ended with a score), ``invalid`` (the text was
#: no action: nothing ran); a guard in front of the env adds ``refused``, ``rollback`` and ``vetoed``.
StepKind = Literal["action", "submit", "invalid", "refused", "rollback", "vetoed"]
_SUBMIT = re.compile(r"^\s*submit\b[ \t]*(.*)\Z", re.DOTALL)


@dataclass(frozen=True)
class Submit:
    """A submit read from text: ``answer`` is what followed the word ('' when nothing did)."""

    answer: str = ""


def read_action(text: str) -> str | Submit:
    """``text`` as a command, or a :class:`Submit` when it is ``submit`` (with its argument)."""
    found = _SUBMIT.match(text) if isinstance(text, str) else None
    return Submit(found.group(1).strip()) if found else text


class GuardFlag(Protocol):
    """Something an env's guard rules saw a command may do to its task files (Bash's ``Flag``)."""

    @property
    def path(self) -> str | None: ...  # the absolute path it touches, when known

    def describe(self) -> str: ...


@dataclass(frozen=True)
class GuardNote:
    """What a guard in front of the env did at a step (see :mod:`intercode_agents.guards`)."""

    flags: list[str] = dataclasses.field(default_factory=list)  # what the guard saw may destroy task files
    checkpoint: list[dict[str, Any]] | None = None  # task directories saved before the command ran
    rollback: dict[str, Any] | None = None  # a rollback after this step, or the rollback step's own
    refusal: str | None = None  # why the guard refused the action (kind "refused")
    veto: str | None = None  # the critic's reasons for sending a submit back (kind "vetoed")
    checkpoint_skipped: str | None = None  # why a flagged command got no checkpoint


@dataclass(frozen=True)
class StepResult:
    """One step: its observation, what the harness measured, and at a submit the score."""

    observation: str
    kind: StepKind
    turn: int
    exit_code: int | None = None
    errored: bool = False  # the action failed to run (non-zero exit, SQL error, exception, invalid)
    timed_out: bool = False
    output_truncated: bool = False  # cut at the sandbox's capture cap
    duration_s: float = 0.0
    truncated: bool = False  # the env's own turn limit is reached (Gymnasium's ``truncated``)
    score: RewardResult | None = None  # at a submit
    submission: str | None = None  # what was scored at a submit
    guard: GuardNote | None = None
    task_files: TaskFiles | None = None  # what the step did to the task files (envs with task_dirs)

    @property
    def terminated(self) -> bool:
        return self.kind == "submit"

    @property
    def reward(self) -> float:
        return float(self.score.reward) if self.score is not None else 0.0

    @property
    def reward_parts(self) -> dict[str, Any]:
        """The score's parts, with ``corrupt`` set when the gold itself cannot run."""
        if self.score is None:
            return {}
        return dict(self.score.parts) | ({"corrupt": True} if self.score.corrupt else {})

    def replace(self, **changes: Any) -> StepResult:
        return dataclasses.replace(self, **changes)

    def info(self) -> dict[str, Any]:
        """The step as Gymnasium's ``info`` dict: ``turn``, ``action_type``, ``exit_code``,
        ``errored``, ``timed_out``, ``output_truncated``, ``duration_s``; at a submit also
        ``reward_parts``, ``corrupt`` and ``submission``."""
        info: dict[str, Any] = {
            "turn": self.turn,
            "action_type": self.kind,
            "exit_code": self.exit_code,
            "errored": self.errored,
            "timed_out": self.timed_out,
            "output_truncated": self.output_truncated,
            "duration_s": self.duration_s,
        }
        if self.score is not None:
            info |= {
                "reward_parts": dict(self.score.parts),
                "corrupt": self.score.corrupt,
                "submission": self.submission,
            }
        if self.guard is not None:
            info["guard"] = dataclasses.asdict(self.guard)
        info["task_files"] = self.task_files.model_dump() if self.task_files is not None else None
        return info

    def gym(self) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Gymnasium's ``(observation, reward, terminated, truncated, info)``."""
        return self.observation, self.reward, self.terminated, self.truncated, self.info()

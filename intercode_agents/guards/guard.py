"""The guard of one episode: the one policy layer that every front-end uses.

A :class:`Guard` wraps an env that is playing a task. Our strategies (``guarded``), the LangChain
middleware (:class:`~intercode_agents.tools.guard_middleware.GuardMiddleware`) and the MCP server
(``intercode-agents mcp --guards``) all go through it, so the three apply the same rules:

- **SQL guard** (:mod:`.sql_guard`): a statement that does not only read is refused before it
  reaches the server. The refusal is the observation (``Refused by the guard: ...``) and never
  reaches the env: the episode's last result stays the last statement that ran.
- **Bash guard** (:mod:`.bash_guard`): a command that may destroy task files is flagged, and the
  task's directory is checkpointed before it runs (:mod:`.checkpoint`). Flags on a literal path that
  does not exist (``> new.txt``) are dropped: nothing is there to lose.
- **Rollback**: the action ``rollback`` (``rollback start`` for the episode's start) restores the
  directory to the last checkpoint, verified by digest; with ``auto_rollback`` a flagged command that
  fails or empties an input is rolled back at once, and its observation says so. The env then reads
  the task files again, so the record says what the rollback gave back (``task_files`` in its note).
- **Critic** (:mod:`.critic`): a submit is reviewed first and can be sent back with reasons, at most
  ``max_vetoes`` times; its tokens are counted in :attr:`Guard.critic_usage`.

Every refusal, checkpoint, rollback and verdict is kept in :attr:`Guard.events` and returned in the
step's ``info["guard"]``, from which the strategies fill the trajectory's steps.

Front-ends call :meth:`Guard.step` (a drop-in for ``env.step``), or :meth:`Guard.prepare` before and
:meth:`Guard.settle` after running an action themselves, holding :attr:`Guard.lock` around the pair.
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel

from intercode_agents.envs.base import Env
from intercode_agents.envs.steps import GuardFlag, GuardNote, StepKind, StepResult, Submit, read_action
from intercode_agents.errors import IntercodeError
from intercode_agents.guards.checkpoint import (
    Checkpoint,
    CheckpointTooLarge,
    emptied,
    restore_checkpoint,
    take_checkpoint,
)
from intercode_agents.guards.critic import Critic, Seen, Verdict
from intercode_agents.guards.policy import GuardPolicy

if TYPE_CHECKING:
    from intercode_agents.sandbox import Sandbox

ROLLBACK_ACTION = re.compile(r"\s*rollback(?:\s+(last|start))?\s*", re.IGNORECASE)


class NothingToRollBack(IntercodeError):
    """The env has no task directory, rollback is off, or no checkpoint was taken."""


@dataclass
class Prepared:
    """What the guard decided about one action before it runs."""

    action: str
    turn: int
    refusal: str | None = None
    flags: list[GuardFlag] = field(default_factory=list)
    checkpoints: list[Checkpoint] = field(default_factory=list)
    skipped: str | None = None  # why a flagged command got no checkpoint

    def note(self) -> GuardNote:
        return GuardNote(
            flags=[flag.describe() for flag in self.flags],
            checkpoint=[cp.note() for cp in self.checkpoints] or None,
            refusal=self.refusal,
            checkpoint_skipped=self.skipped,
        )


def model_name(model: BaseChatModel | None) -> str | None:
    if model is None:
        return None
    for attribute in ("model_name", "model", "model_id"):
        value = getattr(model, attribute, None)
        if isinstance(value, str) and value:
            return value
    return model._llm_type


class Guard:
    """The safeguards of one env's episodes (see the module docstring)."""

    def __init__(
        self, env: Env, policy: GuardPolicy | None = None, *, critic_model: BaseChatModel | None = None
    ) -> None:
        self.env = env
        self.policy = policy or GuardPolicy()
        self.critic = (
            Critic(critic_model, observations=self.policy.critic_observations)
            if self.policy.critic and critic_model is not None
            else None
        )
        self.lock = asyncio.Lock()
        self.critic_usage: dict[str, Any] = {"model": model_name(critic_model), "input_tokens": 0}
        self._clear()

    def _clear(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.history: list[Seen] = []
        self.start_checkpoints: list[Checkpoint] = []
        self.last_checkpoints: list[Checkpoint] = []
        self.vetoes = 0
        self.turn = 0
        self.critic_usage |= {"input_tokens": 0, "output_tokens": 0, "calls": 0}

    # -- what the env offers ------------------------------------------------------------------
    @property
    def task_dirs(self) -> tuple[str, ...]:
        return tuple(getattr(self.env, "task_dirs", ()) or ())

    @property
    def can_roll_back(self) -> bool:
        return self.policy.rollback and bool(self.task_dirs)

    async def _sandbox(self) -> Sandbox | None:
        ensure = getattr(self.env, "ensure_tool_mode", None)
        if ensure is not None and getattr(self.env, "sandbox", None) is None:
            await ensure()  # an env used with no task: its live sandbox starts now
        return getattr(self.env, "sandbox", None)

    def _event(self, kind: str, **detail: Any) -> dict[str, Any]:
        event = {"kind": kind, "turn": self.turn, **detail}
        self.events.append(event)
        return event

    # -- the episode --------------------------------------------------------------------------
    async def begin(self) -> None:
        """Call after ``env.reset``: forget the last episode and checkpoint the start (``rollback start``)."""
        self._clear()
        if self.can_roll_back:
            self.start_checkpoints = await self._checkpoints(turn=0) or []
            self.last_checkpoints = list(self.start_checkpoints)

    async def _checkpoints(self, *, turn: int) -> list[Checkpoint] | None:
        sandbox = await self._sandbox()
        if sandbox is None:
            return None
        taken = []
        for directory in self.task_dirs:
            try:
                checkpoint = await take_checkpoint(
                    sandbox, directory, turn=turn, max_bytes=self.policy.checkpoint_max_bytes
                )
            except CheckpointTooLarge as exc:
                self._event("checkpoint_skipped", reason=str(exc))
                return None
            taken.append(checkpoint)
            self._event("checkpoint", **checkpoint.note())
        return taken

    async def _existing(self, flags: list[GuardFlag]) -> list[GuardFlag]:
        """Drop flags on a literal path that does not exist: nothing is there to lose."""
        known = [f.path for f in flags if f.path is not None]
        sandbox = await self._sandbox() if known else None
        if sandbox is None:
            return flags
        states = await sandbox.path_states(shallow=sorted(set(known)))
        return [f for f in flags if f.path is None or states[f.path].kind != "missing"]

    async def prepare(self, action: str, *, turn: int | None = None) -> Prepared:
        """Judge ``action`` before it runs: a refusal, or flags (and a checkpoint when flagged)."""
        self.turn = turn if turn is not None else self.turn + 1
        prepared = Prepared(action, self.turn)
        if self.policy.sql_guard and (refusal := self.env.guard_refusal(action)) is not None:
            prepared.refusal = refusal
            self._event("refusal", reason=refusal, action=action[:500])
            self.history.append(Seen(action, f"Refused: {refusal}", True))
            return prepared
        if self.policy.bash_guard and self.task_dirs:
            prepared.flags = await self._existing(list(self.env.guard_flags(action, self.task_dirs)))
            if prepared.flags:
                checkpoints = await self._checkpoints(turn=self.turn)
                if checkpoints is None:
                    prepared.skipped = "no checkpoint could be taken (see the events)"
                else:
                    prepared.checkpoints = self.last_checkpoints = checkpoints
        return prepared

    async def settle(
        self, prepared: Prepared, *, observation: str, errored: bool, exit_code: int | None = None
    ) -> dict[str, Any] | None:
        """After the action ran: remember it (for the critic), and roll back when the policy says so.
        Returns the rollback's note, or None."""
        self.history.append(Seen(prepared.action, observation, errored, exit_code))
        if not (self.policy.auto_rollback and prepared.checkpoints):
            return None
        sandbox = await self._sandbox()
        assert sandbox is not None
        why = "the flagged command failed" if errored else None
        for checkpoint in prepared.checkpoints:
            why = why or await emptied(sandbox, checkpoint)
        if why is None:
            return None
        return await self._restore(prepared.checkpoints, reason=why, automatic=True)

    async def _restore(
        self, checkpoints: list[Checkpoint], *, reason: str, automatic: bool
    ) -> dict[str, Any]:
        sandbox = await self._sandbox()
        assert sandbox is not None
        started = time.perf_counter()
        restored = [await restore_checkpoint(sandbox, checkpoint) for checkpoint in checkpoints]
        files = await self.env.task_files_now()  # what the rollback gave back, read from the files
        note = {
            "reason": reason,
            "automatic": automatic,
            "to_turn": checkpoints[0].turn,
            "verified": all(r.verified for r in restored),
            "directories": [r.note() for r in restored],
            "ms": round((time.perf_counter() - started) * 1000, 2),
            "task_files": files.model_dump() if files is not None else None,
        }
        self._event("rollback", **note)
        return note

    async def rollback(self, to: str = "last") -> dict[str, Any]:
        """Restore the task directory to the last checkpoint (``to="start"``: the episode's start)."""
        if not self.can_roll_back:
            why = (
                "rollback is switched off"
                if self.task_dirs
                else f"the {self.env.name} env has no task directory"
            )
            raise NothingToRollBack(f"nothing to roll back: {why}")
        checkpoints = self.start_checkpoints if to == "start" else self.last_checkpoints
        if not checkpoints:
            raise NothingToRollBack("nothing to roll back: no checkpoint was taken in this episode")
        target = (
            "the start of the episode" if checkpoints[0].turn == 0 else f"before turn {checkpoints[0].turn}"
        )
        return await self._restore(checkpoints, reason=f"asked for: back to {target}", automatic=False)

    async def review(self, candidate: str) -> Verdict | None:
        """The critic's verdict on ``candidate``, or None when the critic is off or its vetoes are spent."""
        if self.critic is None or self.vetoes >= self.policy.max_vetoes:
            return None
        task = self.env.task.query if self.env.task is not None else ""
        verdict = await self.critic.review(
            env_name=self.env.name, task=task, candidate=candidate, history=self.history
        )
        self.critic_usage["input_tokens"] += verdict.input_tokens
        self.critic_usage["output_tokens"] += verdict.output_tokens
        self.critic_usage["calls"] += verdict.source != "check"
        if not verdict.accepted:
            self.vetoes += 1
        self._event(
            "veto" if not verdict.accepted else "review",
            source=verdict.source,
            reasons=verdict.reasons,
            vetoes_left=self.policy.max_vetoes - self.vetoes,
        )
        return verdict

    def candidate(self, argument: str) -> str:
        """What a submit with ``argument`` hands in: the argument (Python, CTF) or the last output."""
        if self.env.submit_takes_argument:
            if not argument and self.env.task is not None:
                return str(self.env.task.meta.get("entry_point") or "")
            return argument
        return self.env.last_observation

    # -- the env's API, guarded -------------------------------------------------------------------
    async def act(self, text: str, *, turn: int | None = None, review: bool = True) -> StepResult:
        """Text from a model or a client: ``submit ...`` submits, ``rollback [last|start]`` rolls the
        task files back (where rollback is on), anything else is a command."""
        read = read_action(text)
        if isinstance(read, Submit):
            return await self.submit(read.answer, review=review)
        if (wanted := ROLLBACK_ACTION.fullmatch(text)) and self.can_roll_back:
            self.turn = turn if turn is not None else self.turn + 1
            return await self.rollback_step(wanted.group(1) or "last")
        return await self.step(read, turn=turn)

    async def step(self, command: str, *, turn: int | None = None) -> StepResult:
        """``env.step`` with the safeguards; the result's ``guard`` note says what they did."""
        prepared = await self.prepare(command, turn=turn)
        if prepared.refusal is not None:
            return self._own_step(
                "refused", f"Refused by the guard: {prepared.refusal}", errored=True, note=prepared.note()
            )
        result = await self.env.step(command)
        note = None
        if result.kind == "action":
            note = await self.settle(
                prepared, observation=result.observation, errored=result.errored, exit_code=result.exit_code
            )
        observation = result.observation
        if note is not None:
            verified = "" if note["verified"] else " (the restored state did NOT match the checkpoint)"
            observation += (
                f"\n[guard: {note['reason']}; the task files were rolled back to before it{verified}]"
            )
        return result.replace(observation=observation, guard=replace(prepared.note(), rollback=note))

    async def submit(self, answer: str = "", *, review: bool = True) -> StepResult:
        """``env.submit`` after the critic's review; ``review=False`` submits without it (a forced
        submit when the turns ran out)."""
        verdict = await self.review(self.candidate(answer)) if review and self.env.task is not None else None
        if verdict is not None and not verdict.accepted:
            self.turn += 1
            left = self.policy.max_vetoes - self.vetoes
            text = f"Not submitted: a reviewer sent the answer back: {verdict.reasons}"
            text += (
                f" ({left} more veto{'' if left == 1 else 'es'} possible)"
                if left
                else " (the next submit is final)"
            )
            return self._own_step("vetoed", text, errored=False, note=GuardNote(veto=verdict.reasons))
        return await self.env.submit(answer)

    async def rollback_step(self, to: str = "last") -> StepResult:
        """A rollback as a step of the episode (the ``rollback`` action and tool)."""
        try:
            note = await self.rollback(to)
        except NothingToRollBack as exc:
            return self._own_step("rollback", str(exc), errored=True)
        state = (
            "verified by digest"
            if note["verified"]
            else "NOT verified: the state differs from the checkpoint"
        )
        target = (
            "the start of the episode" if note["to_turn"] == 0 else f"its state before turn {note['to_turn']}"
        )
        text = f"Rolled back {', '.join(self.task_dirs)} to {target} ({state})."
        return self._own_step("rollback", text, errored=not note["verified"], note=GuardNote(rollback=note))

    def _own_step(
        self, kind: StepKind, text: str, *, errored: bool, note: GuardNote | None = None
    ) -> StepResult:
        """A step the guard answered itself (the env ran nothing)."""
        return StepResult(
            observation=text,
            kind=kind,
            turn=self.env.turns,
            errored=errored,
            truncated=self._truncated(),
            guard=note,
        )

    def _truncated(self) -> bool:
        return self.env.max_turns is not None and self.env.turns >= self.env.max_turns

    def summary(self) -> dict[str, Any]:
        """Counts of what the guard did in this episode (what a record keeps besides its steps)."""
        counts: dict[str, int] = {}
        for event in self.events:
            counts[event["kind"]] = counts.get(event["kind"], 0) + 1
        return {"policy": self.policy.guard_settings(), "counts": counts, "critic": dict(self.critic_usage)}

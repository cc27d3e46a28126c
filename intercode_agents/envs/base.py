"""The episode API shared by every environment (Gymnasium semantics, async).

An :class:`Env` owns its sandboxes. ``reset`` starts a task from a pristine state, ``step(command)``
runs one command and ``submit(answer)`` (an answer for Python and CTF; Bash and SQL submit their last
output) ends the episode and earns the reward. Both return a typed
:class:`~intercode_agents.envs.steps.StepResult`; ``env.gym`` (:class:`~intercode_agents.envs.gym.GymView`)
reads action text, ``submit`` included, and answers with Gymnasium's 5-tuple. Concrete envs implement
three hooks: ``_prepare`` (get a pristine sandbox for a task), ``_execute`` (run one action) and
``_score`` (compute the reward of a submission). An env with ``task_dirs`` also measures what each
step did to the task files, read from the file system (``StepResult.task_files``; see
:mod:`intercode_agents.envs.task_files`).
"""

from __future__ import annotations

import dataclasses
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, ClassVar

from intercode_agents.datasets.task import TaskDetails
from intercode_agents.envs.gym import GymView
from intercode_agents.envs.steps import GuardFlag, StepKind, StepResult
from intercode_agents.errors import ConfigError, InvalidAction, SessionDied
from intercode_agents.reward import RewardResult, check_mode
from intercode_agents.trajectory import TaskFiles

if TYPE_CHECKING:
    from intercode_agents.datasets import Task
    from intercode_agents.datasets.sources import TaskSource


@dataclass(frozen=True)
class ActionResult:
    """What running one action produced, before it becomes a Gym step."""

    observation: str
    exit_code: int | None = None
    errored: bool = False
    timed_out: bool = False
    output_truncated: bool = False
    duration_s: float = 0.0
    task_files: TaskFiles | None = None  # what it did to the task files (envs that watch them)


def unreadable(text: object) -> str | None:
    """Why ``text`` is no action at all: not a string, or not sendable as UTF-8 (a lone surrogate,
    which Python strings may carry); None when it is fine."""
    if not isinstance(text, str):
        return f"an action is text, not {type(text).__name__}"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = text[exc.start : exc.end]
        return f"the action holds text that is not valid Unicode ({bad!r} at position {exc.start})"
    return None


class Env(ABC):
    """Base class of every environment: ours (Bash, SQL, Python, CTF) and users' own."""

    #: The env's name; task ids start with it. An env YAML's ``name`` sets it on the instance.
    name: str
    #: The key of the env's rules for failure-mode tags (``bash``, ``sql``, ``python``, ``ctf``: Bash
    #: plus Python rules) and of its texts in the prompt files; other keys get the Bash rules.
    language: ClassVar[str] = "bash"
    #: What an action is written in: picks the run tool (``run_bash``, ``run_sql``, ``run_python``)
    #: and how a model's text reply is read.
    action_language: ClassVar[str] = "bash"
    #: Python and CTF submit an answer; Bash and SQL the last output.
    submit_takes_argument: ClassVar[bool] = False
    #: The submit tool's description, and that of its ``answer`` argument (envs that take one).
    submit_description: ClassVar[str] = (
        "Finish the task: the output of your last action is submitted as the answer."
    )
    answer_description: ClassVar[str] = "The answer to submit."
    #: The env's own prompt texts (name, environment, submit, entry_point), used where a strategy's
    #: prompt file has none under the env's name; an env YAML's ``prompts`` adds to them (in
    #: ``self.prompt_texts``).
    default_prompts: ClassVar[dict[str, str]] = {}
    # How actions may run: "session" (a persistent session); Bash and CTF also "paper" (as the original).
    execution_modes: ClassVar[tuple[str, ...]] = ("session",)

    @classmethod
    def image_for(cls, image: str, execution: str) -> str:
        """The image a task of image ``image`` runs on in ``execution`` mode (the same, here)."""
        return image

    execution: str = "session"
    # Folders holding the task's files, which the guards checkpoint and roll back (none by default).
    task_dirs: ClassVar[tuple[str, ...]] = ()
    #: What the guard's rules do in this env, told to a guarded agent (``guarded`` strategy).
    guard_note: ClassVar[str] = ""

    # -- the family's guard rules (see intercode_agents.guards; used only when a guard is on) -----
    @classmethod
    def guard_refusal(cls, action: str) -> str | None:
        """Why a guarded episode must not run ``action`` at all (SQL: anything but a read), or None."""
        return None

    @classmethod
    def guard_flags(cls, action: str, task_dirs: tuple[str, ...]) -> Sequence[GuardFlag]:
        """What ``action`` may do to the files under ``task_dirs`` (Bash: deletions, overwrites,
        opaque code...): a guarded episode checkpoints them first."""
        return ()

    #: The parts of this class's reward that an agent may be shown (its state against the gold,
    #: never the gold's own contents); the records keep every part. It counts only when declared by
    #: the class whose ``_score`` computes the reward or by a subclass of it: a subclass with a reward
    #: of its own shows none of its parts until it names them (:mod:`intercode_agents.envs.reward_view`).
    agent_parts: ClassVar[frozenset[str]] = frozenset()

    def __init__(
        self,
        *,
        reward: str = "intercode",
        max_turns: int | None = None,
        data_root: str | Path | None = None,
        action_timeout: float = 30.0,
        execution: str = "session",
        backend: Any = None,
    ) -> None:
        """``backend``: where the env's sandboxes run, one engine or several (an engine string such
        as ``"unix:///run/d2.sock"``, ``"a,b"`` for several, a config mapping with a ``type``, a
        :class:`~intercode_agents.sandbox.Backend` or an :class:`~intercode_agents.sandbox.EngineSet`;
        None: ``$INTERCODE_ENGINES``, else the default backend)."""
        from intercode_agents.sandbox import resolve_engines

        check_mode(reward)
        if execution not in self.execution_modes:
            raise ConfigError(
                f"the {self.name} env cannot run actions in {execution!r} execution; "
                f"it has {', '.join(repr(m) for m in self.execution_modes)}"
            )
        self.reward_mode = reward
        self.execution = execution
        self.prompt_texts: dict[str, str] = dict(self.default_prompts)
        self.max_turns = max_turns
        self.data_root = Path(data_root) if data_root else None
        self.action_timeout = action_timeout
        self.engines = resolve_engines(backend)
        self.task: Task | None = None
        self.turns = 0
        self.done = False
        self.last_observation = ""
        # The score of the episode's submit, every part included: the record's, never the agent's.
        self.submitted: RewardResult | None = None
        # Why the agent's own sandbox can no longer run actions (it killed what the env needs), or
        # None. The agent's doing: the episode goes on to a failed score, never an env error.
        self.sandbox_lost: str | None = None

    # -- lifecycle -----------------------------------------------------------------------------
    async def __aenter__(self) -> Env:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def start(self) -> None:  # noqa: B027 - optional hook
        """Acquire long-lived resources (pools, engine client). Called by ``async with``."""

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Release every container this env holds."""

    # -- the Gym API -------------------------------------------------------------------------
    async def reset(
        self, task_id: str | None = None, *, task: Task | None = None
    ) -> tuple[str, dict[str, Any]]:
        """Start ``task`` (or the task named ``task_id``) from a pristine state."""
        from intercode_agents.datasets import get_task

        if task is None:
            if task_id is None:
                raise ConfigError("reset() needs a task_id or a task")
            task = get_task(task_id, data_root=self.data_root)
        if task.env != self.name:
            raise ConfigError(f"task {task.id} belongs to env {task.env!r}, not {self.name!r}")
        await self._prepare(task)
        self.task, self.turns, self.done, self.last_observation = task, 0, False, ""
        self.sandbox_lost, self.submitted = None, None
        await self._watch_task_files()
        info = {"task_id": task.id, "split": task.split, "group": dict(task.group), "image": task.image}
        return self.task_prompt(task), info

    async def step(self, command: str) -> StepResult:
        """Run ``command`` (never read as a submit: that is :meth:`submit`)."""
        self._require_open()
        self.turns += 1
        problem = self.validate_action(command)
        if problem:
            result = ActionResult(observation=f"Invalid action: {problem}", errored=True)
            kind: StepKind = "invalid"
        else:
            started = time.perf_counter()
            result = self._annotate(await self._run_action(command))
            if not result.duration_s:
                result = dataclasses.replace(result, duration_s=time.perf_counter() - started)
            kind = "action"
            self.last_observation = result.observation
        return StepResult(
            observation=result.observation,
            kind=kind,
            turn=self.turns,
            exit_code=result.exit_code,
            errored=result.errored,
            timed_out=result.timed_out,
            output_truncated=result.output_truncated,
            duration_s=result.duration_s,
            truncated=self.max_turns is not None and self.turns >= self.max_turns,
            task_files=result.task_files,
        )

    async def submit(self, answer: str = "") -> StepResult:
        """End the episode and score it: ``answer`` for envs whose submit takes one (Python, CTF),
        the last output otherwise (Bash, SQL: ``answer`` is ignored, as in the original)."""
        self._require_open()
        self.turns += 1
        if problem := unreadable(answer):  # a submit too must be text that can be sent
            return StepResult(
                observation=f"Invalid action: {problem}", kind="invalid", turn=self.turns, errored=True
            )
        self._require_task()
        started = time.perf_counter()
        submission = answer if self.submit_takes_argument else self.last_observation
        files = None
        if self.sandbox_lost is None:
            try:
                files = await self.task_files_now()  # what remained of the task files
            except SessionDied:
                pass  # (the scoring says why the sandbox cannot answer)
        score = await self._scored(submission)
        self.done, self.submitted = True, score
        return StepResult(
            observation=f"Submitted. Reward: {score.reward:g}",
            kind="submit",
            turn=self.turns,
            duration_s=time.perf_counter() - started,
            score=score,
            submission=submission,
            task_files=files,
        )

    @property
    def gym(self) -> GymView:
        """This env as Gymnasium's API over text actions (``submit ...`` included), 5-tuples out."""
        return GymView(self)

    def _require_open(self) -> None:
        if self.done:
            raise ConfigError("the episode is over; call reset() to start another")

    async def evaluate(self, submission: str | None = None) -> RewardResult:
        """Score the current state as if submitted now; the episode goes on (Try Again scores every turn)."""
        self._require_task()
        if submission is not None and (problem := unreadable(submission)):
            raise InvalidAction(problem)
        return await self._scored(self.last_observation if submission is None else submission)

    async def _run_action(self, action: str) -> ActionResult:
        """Run an action and measure what it did to the task files; a sandbox the agent broke ends
        its actions, not the episode."""
        if self.sandbox_lost is not None:
            return ActionResult(observation=self._lost_note(), errored=True)
        try:
            result = await self._execute(action)
            return dataclasses.replace(result, task_files=await self.task_files_now())
        except SessionDied as exc:
            await self._blame_agent(exc)
            return ActionResult(observation=self._lost_note(), errored=True)

    async def task_files_now(self) -> TaskFiles | None:
        """Read the task files now and say what changed since the last reading (see
        :mod:`intercode_agents.envs.task_files`): the env calls it after every action and at the
        submit, a guard after a rollback. None when the env watches no task files (no ``task_dirs``,
        no task, or too many entries)."""
        return None

    async def _watch_task_files(self) -> None:  # noqa: B027 - optional hook
        """Record the task files as the episode starts (envs whose sandbox holds ``task_dirs``)."""

    async def _scored(self, submission: str) -> RewardResult:
        """The score of ``submission``; a failed one, with the reason in its parts, when the agent's
        own sandbox is gone (a harness fault still raises)."""
        if self.sandbox_lost is None:
            try:
                return await self._score(submission)
            except SessionDied as exc:
                if not await self._agent_side_broken(exc):
                    raise
                await self._blame_agent(exc)
        parts: dict[str, Any] = {"sandbox_lost": True, "sandbox_lost_reason": self.sandbox_lost}
        return RewardResult(0.0, parts, note=f"the agent's sandbox was lost: {self.sandbox_lost}")

    async def _blame_agent(self, exc: SessionDied) -> None:
        """Record ``exc`` (raised on the agent's side) as the agent's doing, once the engine is seen
        to answer: when it does not, the fault is the harness's and goes up."""
        await self._check_engine()
        self.sandbox_lost = str(exc) or type(exc).__name__

    async def _check_engine(self) -> None:
        """Raise EngineUnavailable when the engine of the agent's sandbox does not answer."""
        await self.engines.first.ping()

    def _lost_note(self) -> str:
        return (
            f"[the sandbox can no longer run actions: {self.sandbox_lost}. This was caused from inside it; "
            "the episode can only be submitted now.]"
        )

    async def _agent_side_broken(self, exc: SessionDied) -> bool:
        """Whether ``exc`` came of the agent's own sandbox being unusable now (its container
        stopped, say, or its programs changed). Envs whose agent has no sandbox of its own say False:
        every failure is then the harness's."""
        return False

    # -- helpers for subclasses and tools --------------------------------------------------------
    def task_prompt(self, task: Task) -> str:
        """The observation ``reset`` returns: the task's question (subclasses may add context)."""
        return task.query

    def validate_action(self, action: str) -> str | None:
        """Return why ``action`` cannot run, or None. Never rewrites the action."""
        if problem := unreadable(action):
            return problem
        if "\x00" in action:
            return "the action contains a NUL byte"
        if not action.strip():
            return "the action is empty"
        return None

    def _require_task(self) -> Task:
        if self.task is None:
            raise ConfigError(f"no task is loaded; call reset(task_id=...) on the {self.name} env first")
        return self.task

    def _annotate(self, result: ActionResult) -> ActionResult:
        """Add what the harness has to tell the agent about its sandbox to an action's observation."""
        return result

    # -- what tools, strategies and the gold policy ask of an env ----------------------------------
    def default_submission(self) -> str:
        """The answer a bare submit carries in an env whose submit takes one ('' when there is none)."""
        return ""

    def submission_candidate(self, actions: list[str], observations: list[str]) -> str | None:
        """What a strategy submits for an agent that did not say: None (the last output) for envs
        whose submit takes no answer, else the default submission."""
        return self.default_submission() if self.submit_takes_argument else None

    @classmethod
    def gold_actions(cls, task: Task) -> list[str]:
        """The gold policy: run the gold and submit its output, or submit the gold as the answer."""
        if cls.submit_takes_argument:
            return [f"submit {task.gold}"]
        return [task.gold, "submit"]

    @classmethod
    def task_details(
        cls, record: dict[str, Any], source: TaskSource, index: int, root: Path | None
    ) -> TaskDetails:
        """The group, meta and availability of the task made from ``record`` (the ``index``-th of its
        split's file; ``root`` is the InterCode data root for splits that read from it, for
        ``source.resolve``). By default the meta holds the record's fields that are not the query or the
        gold, and the group those the source's ``group`` option names."""
        used = {"query", "gold", *(v for v in source.fields.values() if isinstance(v, str))}
        meta = {k: v for k, v in record.items() if k not in used}
        group = {key: str(record[key]) for key in source.options.get("group", []) if key in record}
        return TaskDetails(group=group, meta=meta)

    # -- hooks ------------------------------------------------------------------------------------
    @abstractmethod
    async def _prepare(self, task: Task) -> None:
        """Make a pristine sandbox (and session) ready for ``task``."""

    @abstractmethod
    async def _execute(self, action: str) -> ActionResult:
        """Run one (validated) action in the current sandbox."""

    @abstractmethod
    async def _score(self, submission: str) -> RewardResult:
        """Reward of ``submission`` (the last observation, or the submit argument) for the current task."""

"""Episodes driven from outside, one step at a time: what the RL front ends share.

OpenEnv's server, SkyRL-gym's and TRL's environments (``integrations/``) and the scale-out work's
step-level calls each give a trainer one episode at a time of an env: reset it to a task, send
actions as text, read back what an agent may see. A :class:`Rollout` does that for all of them.

- **The task.** ``reset`` takes a task id, or a selector and a seed to draw one from (no seed: drawn
  at random). With ``RolloutOptions.tasks`` only those tasks may be played, so a trainer keeps its
  held-out split out of a client's reach.
- **What a client sees.** The observation as a model sees it (head and tail, with the exit code:
  ``tools.observation.model_view``), the reward at a submit (0.0 before it), ``done``, and an
  ``info`` with the step's flags and, at a submit, the reward parts an agent may see
  (``envs.reward_view.agent_parts``). At a reset, the task's public view (``Task.public``). Never a
  gold, a test, or a reward part that describes the gold: a policy optimises against whatever leaks.
- **Turns.** With ``max_turns``, the action (or unreadable reply) that uses the last turn is followed
  by a submit of the episode as it stands, as a strategy's forced submit: its ``done`` comes with the
  reward.
- **Records.** Each episode is recorded through :class:`~intercode_agents.envs.recorder.EpisodeRecorder`
  and handed to ``on_record`` when it ends: at its submit, at the next reset or at :meth:`close`
  (then unsubmitted: ``failed``, with the reason). An env that raises ends the episode as
  ``env_error`` and the call raises :class:`EpisodeFailed`.
- **One loop.** The env is made on the event loop of the first reset, and every call must come from
  that loop (the synchronous adapters own one: ``integrations/background_loop.py``). Calls are taken
  one at a time; a :meth:`close` waits for the step in flight.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from intercode_agents.datasets import Task, get_task, select_tasks
from intercode_agents.envs import Env, make_env
from intercode_agents.envs.recorder import EpisodeRecorder
from intercode_agents.envs.reward_view import agent_parts
from intercode_agents.envs.steps import StepResult, Submit, read_action
from intercode_agents.errors import IntercodeError
from intercode_agents.spec import load_spec
from intercode_agents.tools.observation import DEFAULT_OBSERVATION_LIMIT, model_view
from intercode_agents.trajectory import Trajectory

T = TypeVar("T")
TURN_LIMIT = "turn limit reached: the episode was submitted as it stands"
FORCED = "the turn budget is spent: the episode is submitted as it stands"


class RolloutError(IntercodeError):
    """A call a rollout cannot carry out: no episode, an episode that is over, a task out of reach."""


class EpisodeFailed(RolloutError):
    """The env failed during the call (the harness's or the engine's fault, not the policy's); the
    episode is over and recorded as ``env_error``."""


@dataclass(frozen=True)
class RolloutOptions:
    """What every episode of a rollout gets."""

    max_turns: int | None = None  # actions and unreadable replies before a forced submit (None: no limit)
    observation_limit: int = DEFAULT_OBSERVATION_LIMIT  # characters of an observation a client sees
    tasks: str | None = None  # a selector of the tasks that may be played (None: every task of the env)
    env_options: dict[str, Any] = field(default_factory=dict)  # make_env's: reward, action_timeout, ...
    client: str = "rollout"  # the records' strategy label (openenv, skyrl, trl)
    model: str = "policy"  # the records' model label


@dataclass(frozen=True)
class Turn:
    """What a client is given for a reset or a step."""

    observation: str
    reward: float = 0.0
    done: bool = False
    info: dict[str, Any] = field(default_factory=dict)


class Rollout:
    """One env driven one step at a time, episode after episode (see the module docstring)."""

    def __init__(
        self,
        env: str | Path,
        options: RolloutOptions | None = None,
        *,
        on_record: Callable[[Trajectory], None] | None = None,
    ) -> None:
        self.env_name = env
        self.spec = load_spec(env)  # a bad env is an error here; a YAML's env becomes known by name
        self.options = options or RolloutOptions()
        self.on_record = on_record
        self.env: Env | None = None
        self.episode_id: str | None = None
        self.trajectory: Trajectory | None = None  # the last finished record
        self._recorder: EpisodeRecorder | None = None
        self._turns = 0
        self._actions: list[str] = []
        self._outputs: list[str] = []
        self._allowed: list[Task] | None = None
        self._lock = asyncio.Lock()
        self._closed = False

    # -- what a client may ask without acting -------------------------------------------------
    @property
    def done(self) -> bool:
        """No episode runs: none was started, or it was submitted or ended."""
        return self._recorder is None

    @property
    def turn(self) -> int:
        return self._turns

    def state(self) -> dict[str, Any]:
        task = self.env.task if self.env is not None else None  # (the last episode's, once it is over)
        return {
            "episode_id": self.episode_id,
            "task_id": task.id if task is not None else None,
            "turn": self._turns,
            "done": self.done,
            "max_turns": self.options.max_turns,
        }

    # -- episodes ------------------------------------------------------------------------------
    async def reset(
        self,
        task_id: str | None = None,
        *,
        selector: str | None = None,
        seed: int | None = None,
        episode_id: str | None = None,
    ) -> Turn:
        """Start an episode of ``task_id``, or of a task drawn from ``selector`` (or from the allowed
        tasks) with ``seed``; an episode still running is ended first, unsubmitted. The observation
        is the task's question."""
        async with self._lock:
            self._check_open()
            self._end("a new episode was started before this one was submitted")
            task = await self._choose(task_id, selector, seed)
            env = await self._env()
            try:
                question, info = await env.reset(task=task)
            except IntercodeError as exc:
                raise RolloutError(str(exc)) from exc
            self.episode_id = episode_id or uuid.uuid4().hex
            self._turns, self._actions, self._outputs = 0, [], []
            context = {
                "episode_id": self.episode_id,
                "client": self.options.client,
                "max_turns": self.options.max_turns,
                "observation_limit": self.options.observation_limit,
                "tasks": self.options.tasks,
            }
            recorder = EpisodeRecorder(
                env, strategy=self.options.client, model=self.options.model, seed=seed, context=context
            )
            recorder.started(question, info)
            self._recorder = recorder
            return Turn(
                question,
                info={
                    "episode_id": self.episode_id,
                    "task": task.public().model_dump(),
                    "max_turns": self.options.max_turns,
                    "action_language": env.action_language,
                    "submit_takes_answer": env.submit_takes_argument,
                },
            )

    async def act(self, text: str) -> Turn:
        """A client's action as text: ``submit [answer]`` submits, anything else runs as a command."""
        action = read_action(text)
        if isinstance(action, Submit):
            return await self.submit(action.answer or None)
        return await self.step(action)

    async def step(self, command: str) -> Turn:
        """Run ``command`` in the episode's sandbox."""
        async with self._lock:
            env, recorder = self._running()
            self._turns += 1
            result: StepResult = await self._env_call(env.step(command))
            if result.kind == "action":
                self._actions.append(command)
                self._outputs.append(result.observation)
            view = model_view(
                result.observation,
                self.options.observation_limit,
                exit_code=result.exit_code,
                timed_out=result.timed_out,
            )
            recorder.step(result, command, turn=self._turns, shown=view.text, shown_truncated=view.truncated)
            info = {
                "turn": self._turns,
                "action_type": result.kind,
                "exit_code": result.exit_code,
                "errored": result.errored,
                "timed_out": result.timed_out,
                "output_truncated": result.output_truncated,
                "observation_truncated": view.truncated,
                "turns_left": self._turns_left(),
            }
            return await self._after_turn(Turn(view.text, info=info))

    async def invalid(self, text: str, feedback: str) -> Turn:
        """A reply that held no action (a policy's text the reader could not use): nothing runs, a
        turn is used, and ``feedback`` (why, as the model should read it) is the observation."""
        async with self._lock:
            _, recorder = self._running()
            self._turns += 1
            recorder.note("invalid", text, feedback, turn=self._turns, errored=True)
            info = {"turn": self._turns, "action_type": "invalid", "turns_left": self._turns_left()}
            return await self._after_turn(Turn(feedback, info=info))

    async def submit(self, answer: str | None = None, *, forced: bool = False) -> Turn:
        """End the episode and score it: Bash and SQL submit the last output; Python takes the
        function's name (default: the one the task names), CTF the flag (default: the last one the
        actions printed). ``forced``: the client submits for a policy that stopped (no turn is used)."""
        async with self._lock:
            self._running()
            if not forced:
                self._turns += 1
            return await self._submit(answer, forced=forced)

    async def end(self, why: str = "ended by the client") -> Trajectory | None:
        """End the running episode without a submit (recorded as ``failed``, with ``why``); return
        the last finished record."""
        async with self._lock:
            self._end(why)
            return self.trajectory

    async def close(self, why: str = "the client went away") -> Trajectory | None:
        """End the running episode and remove the env's sandboxes. Idempotent."""
        async with self._lock:
            self._end(why)
            self._closed = True
            env, self.env = self.env, None
            if env is not None:
                await env.close()
            return self.trajectory

    # -- internals -----------------------------------------------------------------------------
    async def _after_turn(self, turn: Turn) -> Turn:
        """Submit the episode as it stands once the turn budget is spent."""
        limit = self.options.max_turns
        if limit is None or self._turns < limit or self._recorder is None:
            return turn
        scored = await self._submit(None, forced=True)
        observation = f"{turn.observation}\n[{TURN_LIMIT}]"
        return Turn(observation, scored.reward, True, turn.info | {"submit": scored.info})

    async def _submit(self, answer: str | None, *, forced: bool) -> Turn:
        env, recorder = self._running()
        if answer is None and env.submit_takes_argument:
            answer = env.submission_candidate(self._actions, self._outputs)
        answer = answer or ""
        result: StepResult = await self._env_call(env.submit(answer))
        action = f"submit {answer}" if answer else "submit"
        recorder.step(result, action, turn=self._turns, thought=FORCED if forced else None)
        if result.kind != "submit":  # an answer that is no text at all: refused, the episode goes on
            info = {"turn": self._turns, "action_type": result.kind, "turns_left": self._turns_left()}
            return Turn(result.observation, info=info)
        self._finish(settle=True)
        return Turn(
            result.observation,
            result.reward,
            True,
            {
                "turn": self._turns,
                "action_type": "submit",
                "forced": forced,
                "reward_parts": agent_parts(env, result.reward_parts),
                "corrupt": bool(result.reward_parts.get("corrupt")),
                "solved": self.trajectory is not None and self.trajectory.solved,
            },
        )

    def _turns_left(self) -> int | None:
        limit = self.options.max_turns
        return None if limit is None else max(limit - self._turns, 0)

    def _running(self) -> tuple[Env, EpisodeRecorder]:
        self._check_open()
        if self._recorder is None or self.env is None:
            raise RolloutError("no episode is running: call reset first (a submitted episode is over)")
        return self.env, self._recorder

    def _check_open(self) -> None:
        if self._closed:
            raise RolloutError("this rollout is closed (its session ended); start another")

    async def _env_call(self, call: Awaitable[T]) -> T:
        try:
            return await call
        except Exception as exc:
            if self._recorder is not None:
                self._recorder.failed("env_error", f"{type(exc).__name__}: {exc}")
                self._finish(settle=False)
            raise EpisodeFailed(f"the env failed, the episode is over: {type(exc).__name__}: {exc}") from exc

    def _end(self, why: str) -> None:
        if self._recorder is not None:
            self._recorder.failed("failed", f"not submitted: {why}")
            self._finish(settle=False)

    def _finish(self, *, settle: bool) -> None:
        recorder, self._recorder = self._recorder, None
        if recorder is None:
            return
        self.trajectory = recorder.finish(settle=settle)
        if self.on_record is not None:
            self.on_record(self.trajectory)

    async def _env(self) -> Env:
        if self.env is None:
            env = make_env(self.env_name, **self.options.env_options)
            await env.start()
            self.env = env
        return self.env

    async def _choose(self, task_id: str | None, selector: str | None, seed: int | None) -> Task:
        if task_id is not None and selector is not None:
            raise RolloutError("give a task_id or a selector, not both")
        allowed = await self._allowed_tasks()
        data_root = self.options.env_options.get("data_root")
        try:
            if task_id is not None:
                if not isinstance(task_id, str):
                    raise RolloutError(f"a task id is text, not {type(task_id).__name__}")
                task = await asyncio.to_thread(get_task, task_id, data_root=data_root)
                pool = [task]
            elif selector is not None:
                pool = await asyncio.to_thread(select_tasks, self.env_name, selector, data_root=data_root)
            else:
                pool = (
                    allowed
                    if allowed is not None
                    else await asyncio.to_thread(select_tasks, self.env_name, None, data_root=data_root)
                )
        except RolloutError:
            raise
        except IntercodeError as exc:
            raise RolloutError(str(exc)) from exc
        if allowed is not None:
            ids = {task.id for task in allowed}
            pool = [task for task in pool if task.id in ids]
            if not pool:
                asked = task_id or selector
                raise RolloutError(
                    f"{asked!r} names no task this server plays (its tasks: {self.options.tasks})"
                )
        if not pool:
            raise RolloutError(f"the selector {selector!r} names no task")
        task = pool[0] if task_id is not None else random.Random(seed).choice(pool)
        if task.unavailable:
            raise RolloutError(f"task {task.id} cannot run here: {task.unavailable}")
        return task

    async def _allowed_tasks(self) -> list[Task] | None:
        if self.options.tasks is None:
            return None
        if self._allowed is None:
            data_root = self.options.env_options.get("data_root")
            try:
                self._allowed = await asyncio.to_thread(
                    select_tasks, self.env_name, self.options.tasks, data_root=data_root
                )
            except IntercodeError as exc:
                raise RolloutError(str(exc)) from exc
        return self._allowed

"""Episodes driven without a chat model: the gold policy, replays of recorded actions, and a human.

:func:`play_direct` sends each action a policy gives straight to the env and records the episode in the
same :class:`~intercode_agents.trajectory.Trajectory` schema the strategies use (strategy ``"direct"``).
Like :meth:`Strategy.run <intercode_agents.strategies.Strategy.run>` it never raises for env failures
(they become the ``env_error`` outcome), only for bad arguments, and a submitted episode's outcome
follows from its reward and parts (:meth:`~intercode_agents.trajectory.Trajectory.settle`).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from intercode_agents.datasets import Task
from intercode_agents.envs.base import Env
from intercode_agents.errors import ConfigError, UnknownTask
from intercode_agents.trajectory import Step, Trajectory

DIRECT = "direct"  # the strategy name of episodes no prompting strategy drove
FORCED_SUBMIT = "no action left: the episode is submitted as it stands"

#: Gives the next action from (turn, last observation); None ends the episode (a forced submit follows).
NextAction = Callable[[int, str], Awaitable[str | None]]


def gold_actions(task: Task, env: Env | None = None) -> list[str]:
    """The gold policy of the task's env (:meth:`Env.gold_actions <intercode_agents.envs.Env.gold_actions>`):
    Bash/SQL run the gold then ``submit``; Python runs the gold code then ``submit <entry_point>``; CTF
    (and any env whose submit takes the answer) submits the gold."""
    if env is None:
        from intercode_agents.envs.registry import load_spec

        return load_spec(task.env).env_class().gold_actions(task)
    return env.gold_actions(task)


def replayable_actions(traj: Trajectory) -> list[str]:
    """The actions of a record that reached the env: steps the parser rejected never did, and model
    messages (an agent's text) and scores the agent asked for (``evaluate``) ran nothing."""
    return [step.action for step in traj.steps if step.kind not in ("invalid", "message", "evaluate")]


def scripted(actions: list[str]) -> NextAction:
    pending = list(actions)

    async def next_action(turn: int, observation: str) -> str | None:
        return pending.pop(0) if pending else None

    return next_action


async def play_direct(
    env: Env,
    task: Task,
    next_action: NextAction,
    *,
    model: str,
    seed: int | None = None,
    max_turns: int | None = None,
    on_observation: Callable[[str, dict[str, Any]], None] | None = None,
) -> Trajectory:
    """Play ``task`` on ``env`` with actions from ``next_action`` until a submit (or ``max_turns``)."""
    started, clock = time.time(), time.perf_counter()
    traj = Trajectory(
        task_id=task.id,
        env=env.name,
        strategy=DIRECT,
        model=model,
        seed=seed,
        reward_mode=env.reward_mode,
        execution=env.execution,
        context={"max_turns": max_turns, "policy": model, "language": env.language},
        started_at=started,
    )
    try:
        await _play(env, task, next_action, traj, max_turns, on_observation)
    except (ConfigError, UnknownTask):
        raise
    except Exception as exc:
        traj.outcome, traj.error = "env_error", f"{type(exc).__name__}: {exc}"
    else:
        traj.settle()
    traj.duration_s = time.perf_counter() - clock
    return traj


async def _play(
    env: Env,
    task: Task,
    next_action: NextAction,
    traj: Trajectory,
    max_turns: int | None,
    on_observation: Callable[[str, dict[str, Any]], None] | None,
) -> None:
    try:
        observation, info = await env.reset(task=task)
    except (ConfigError, UnknownTask):
        raise
    except Exception as exc:
        raise RuntimeError(f"env reset failed: {type(exc).__name__}: {exc}") from exc
    traj.group = dict(info.get("group") or {})
    traj.question = observation
    traj.image_id = info.get("image")
    turn = 0
    while not env.done:
        action = None if max_turns is not None and turn >= max_turns else await next_action(turn, observation)
        forced = action is None
        if forced:
            action = "submit"
        else:
            turn += 1
        observation, reward, terminated, _, info = await env.step(action)
        traj.steps.append(_step(len(traj.steps) + 1, action, observation, info, forced))
        if on_observation is not None:
            on_observation(observation, info)
        if terminated:
            _finish(traj, reward, info)


def _step(number: int, action: str, observation: str, info: dict[str, Any], forced: bool) -> Step:
    kind = info.get("action_type", "action")
    return Step(
        turn=number,
        kind=kind if kind in ("action", "submit", "invalid") else "action",
        action=action,
        observation=observation,
        exit_code=info.get("exit_code"),
        errored=bool(info.get("errored")),
        reward=None,
        duration_s=float(info.get("duration_s") or 0.0),
        output_truncated=bool(info.get("output_truncated")),
        timed_out=bool(info.get("timed_out")),
        thought=FORCED_SUBMIT if forced else None,
        task_files=info.get("task_files"),
    )


def _finish(traj: Trajectory, reward: float, info: dict[str, Any]) -> None:
    traj.reward = float(reward)
    traj.steps[-1].reward = float(reward)
    parts = dict(info.get("reward_parts") or {})
    if info.get("corrupt"):
        parts["corrupt"] = True
    traj.reward_parts = parts

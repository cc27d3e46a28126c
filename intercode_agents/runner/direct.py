"""Episodes driven without a chat model: the gold policy, replays of recorded actions, and a human.

:func:`play_direct` sends each action a policy gives straight to the env and records the episode in the
same :class:`~intercode_agents.trajectory.Trajectory` schema the strategies use (strategy ``"direct"``).
Like :meth:`Strategy.run <intercode_agents.strategies.Strategy.run>` it never raises for env failures
(they become the ``env_error`` outcome), only for bad arguments, and a submitted episode's outcome
follows from its reward and parts (:meth:`~intercode_agents.trajectory.Trajectory.settle`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from intercode_agents.datasets import Task
from intercode_agents.envs.base import Env
from intercode_agents.envs.recorder import EpisodeRecorder
from intercode_agents.envs.steps import StepResult, Submit, read_action
from intercode_agents.errors import ConfigError, UnknownTask
from intercode_agents.trajectory import Trajectory

DIRECT = "direct"  # the strategy name of episodes no prompting strategy drove
FORCED_SUBMIT = "no action left: the episode is submitted as it stands"

#: Gives the next action from (turn, last observation); None ends the episode (a forced submit follows).
NextAction = Callable[[int, str], Awaitable[str | None]]


def gold_actions(task: Task, env: Env | None = None) -> list[str]:
    """The gold policy of the task's env (:meth:`Env.gold_actions <intercode_agents.envs.Env.gold_actions>`):
    Bash/SQL run the gold then ``submit``; Python runs the gold code then ``submit <entry_point>``; CTF
    (and any env whose submit takes the answer) submits the gold."""
    if env is None:
        from intercode_agents.envs.registry import env_class

        return env_class(task.env).gold_actions(task)
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
    on_observation: Callable[[StepResult], None] | None = None,
) -> Trajectory:
    """Play ``task`` on ``env`` with actions from ``next_action`` until a submit (or ``max_turns``).

    The actions are text (a gold, a recorded action, what a person typed): ``submit ...`` submits,
    read by :func:`~intercode_agents.envs.steps.read_action`."""
    context = {"max_turns": max_turns, "policy": model, "language": env.language}
    recorder = EpisodeRecorder(env, strategy=DIRECT, model=model, seed=seed, context=context)
    recorder.trajectory.task_id = task.id
    try:
        await _play(env, task, next_action, recorder, max_turns, on_observation)
    except (ConfigError, UnknownTask):
        raise
    except Exception as exc:
        recorder.failed("env_error", f"{type(exc).__name__}: {exc}")
        return recorder.finish(settle=False)
    return recorder.finish()


async def _play(
    env: Env,
    task: Task,
    next_action: NextAction,
    recorder: EpisodeRecorder,
    max_turns: int | None,
    on_observation: Callable[[StepResult], None] | None,
) -> None:
    try:
        observation, info = await env.reset(task=task)
    except (ConfigError, UnknownTask):
        raise
    except Exception as exc:
        raise RuntimeError(f"env reset failed: {type(exc).__name__}: {exc}") from exc
    recorder.started(observation, info)
    await play_actions(env, next_action, recorder, max_turns=max_turns, on_observation=on_observation)


async def play_actions(
    env: Env,
    next_action: NextAction,
    recorder: EpisodeRecorder,
    *,
    max_turns: int | None = None,
    on_observation: Callable[[StepResult], None] | None = None,
) -> None:
    """Play the actions of ``next_action`` on ``env``, which was just reset (its question is the
    recorder's), until a submit: the policy's own, or a forced one once it gives None or ``max_turns``
    are spent. Each step is recorded; env failures go up. (Another harness that resets the env itself,
    Inspect's sandbox provider, plays the gold through this too.)"""
    observation = recorder.trajectory.question
    turn = 0
    while not env.done:
        text = None if max_turns is not None and turn >= max_turns else await next_action(turn, observation)
        forced = text is None
        if text is None:
            text = "submit"
        else:
            turn += 1
        action = read_action(text)
        result = await (env.submit(action.answer) if isinstance(action, Submit) else env.step(action))
        observation = result.observation
        recorder.step(result, text, thought=FORCED_SUBMIT if forced else None)
        if on_observation is not None:
            on_observation(result)

"""The concurrent core of a run: K workers, each owning one env, share a queue of episodes.

Every worker plays its episodes one after the other on its own env; the envs of one event loop share
the warm sandbox pools. An episode that ends in an env or model error is played again on the same
worker within the bounds of a :class:`~intercode_agents.runner.retries.RetryPolicy`, and only its last
attempt is handed over. A finished trajectory goes to ``on_done`` at once (the runner appends it to
the records). Cancelling the run (Ctrl-C) cancels the episodes in flight and closes every env, which
removes their containers; finished episodes were already handed over.

With ``ray`` (a :class:`~intercode_agents.runner.ray.driver.RayRun`) the same queue is played by the
actors of a Ray cluster's nodes instead, each on its node's own engines; the finished trajectories
still come back here, one by one, to ``on_done`` (see :mod:`intercode_agents.runner.ray`).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from intercode_agents.datasets import Task
from intercode_agents.envs import Env, make_env
from intercode_agents.errors import IntercodeError
from intercode_agents.runner.players import Player
from intercode_agents.runner.retries import NO_RETRIES, RetryPolicy, play_with_retries
from intercode_agents.trajectory import FailedAttempt, Trajectory

if TYPE_CHECKING:
    from intercode_agents.runner.ray.driver import RayRun


@dataclass(frozen=True)
class Episode:
    """One episode of a run: a task's ``epoch``-th sample, and the failed attempts recorded before."""

    task: Task
    seed: int | None = None
    epoch: int = 1
    earlier: tuple[FailedAttempt, ...] = ()


async def run_episodes(
    env_name: str,
    episodes: Iterable[Episode],
    player: Player,
    *,
    concurrency: int = 1,
    env_options: dict[str, Any] | None = None,
    image_ids: dict[str, str] | None = None,
    on_done: Callable[[Trajectory], None] | None = None,
    envs: Sequence[Env] | None = None,
    retry: RetryPolicy = NO_RETRIES,
    keep_going: Callable[[], bool] | None = None,
    ray: RayRun | None = None,
) -> list[Trajectory]:
    """Play ``episodes`` with at most ``concurrency`` at a time; return the trajectories in finish order.

    Each worker makes its own env and closes it at the end, unless ``envs`` are given: then one
    worker plays on each of them and leaves it open (its pools stay warm for the next call).
    ``keep_going`` is asked before each episode starts; once it says False no more start (the run's
    cost cap), and the episodes in flight finish. With ``ray`` the nodes play them (``concurrency``,
    ``envs`` and ``image_ids`` are the nodes' own then, and ``env_options`` go to every node but its
    ``backend``: a node drives its own engines).
    """
    if ray is not None:
        options = dict(env_options or {})
        return await ray.play(
            env_name,
            episodes,
            player,
            options=options,
            retry=retry,
            on_done=on_done,
            keep_going=keep_going,
            execution=options.get("execution", "session"),
        )
    queue: asyncio.Queue[Episode] = asyncio.Queue()
    for episode in episodes:
        queue.put_nowait(episode)
    finished: list[Trajectory] = []

    async def play_all(env: Env) -> None:
        while not queue.empty() and (keep_going is None or keep_going()):
            episode = queue.get_nowait()
            traj = await play_with_retries(
                functools.partial(player.play, env, episode.task, episode.seed), retry, episode.earlier
            )
            traj.epoch = episode.epoch
            if image_ids and episode.task.image in image_ids:
                traj.image_id = image_ids[episode.task.image]
            finished.append(traj)
            if on_done is not None:
                on_done(traj)

    async def worker() -> None:
        async with make_env(env_name, **(env_options or {})) as env:
            await play_all(env)

    workers = max(1, min(concurrency, queue.qsize()))
    try:
        async with asyncio.TaskGroup() as group:
            if envs is not None:
                for env in envs[:workers]:
                    group.create_task(play_all(env))
            else:
                for _ in range(workers):
                    group.create_task(worker())
    except BaseExceptionGroup as eg:
        raise _first_error(eg) from None
    return finished


def _first_error(eg: BaseExceptionGroup) -> BaseException:
    """The error to show for a failed run: a project error (a bad argument) first, else the first."""
    leaves: list[BaseException] = []

    def walk(exc: BaseException) -> None:
        if isinstance(exc, BaseExceptionGroup):
            for inner in exc.exceptions:
                walk(inner)
        else:
            leaves.append(exc)

    walk(eg)
    for exc in leaves:
        if isinstance(exc, IntercodeError):
            return exc
    return leaves[0]

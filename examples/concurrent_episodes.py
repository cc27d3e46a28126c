"""Many episodes at once: one env per episode, all started together with asyncio.gather.

    python examples/concurrent_episodes.py                 # every mini Bash, SQL and Python task
    python examples/concurrent_episodes.py --strategy try_again --envs bash --limit 4

The model is scripted to replay each task's gold answer through the chosen strategy, so every
episode should be solved; the point is the wall time against the summed episode times.
"""

from __future__ import annotations

import argparse
import asyncio
import time

from intercode_agents import make_env
from intercode_agents.datasets import Task, select_tasks
from intercode_agents.models.scripted import ScriptedChatModel
from intercode_agents.sandbox import close_docker_client
from intercode_agents.strategies import get_strategy
from intercode_agents.trajectory import Trajectory


def gold_replay(task: Task, strategy: str) -> ScriptedChatModel:
    """A model that answers with the gold action, then submits (with the function name for Python)."""
    plan = ["1. Run the answer.\n2. Submit."] if strategy == "plan_solve" else []
    if task.env == "ctf":
        return ScriptedChatModel([*plan, f"Thought: I know the flag.\nAction: submit {task.gold}"])
    submit = f"submit {task.meta['entry_point']}" if task.env == "python" else "submit"
    action = f"Thought: this should do it.\nAction:\n```{task.env}\n{task.gold}\n```"
    return ScriptedChatModel([*plan, action, f"Action: {submit}"])


async def episode(task: Task, strategy: str, gate: asyncio.Semaphore) -> Trajectory:
    async with gate, make_env(task.env) as env:
        return await get_strategy(strategy, max_turns=4).run(env, gold_replay(task, strategy), task=task)


async def main(envs: list[str], strategy: str, limit: int) -> list[Trajectory]:
    tasks = [task for name in envs for task in select_tasks(name, "mini")]
    gate = asyncio.Semaphore(limit)
    started = time.perf_counter()
    trajectories = await asyncio.gather(*(episode(task, strategy, gate) for task in tasks))
    wall = time.perf_counter() - started
    await close_docker_client()
    for t in trajectories:
        line = f"{t.task_id:16} {t.outcome:10} reward={t.reward}  turns={t.turns}  {t.duration_s:5.2f}s"
        print(line, t.error or "")
    solved = sum(t.solved for t in trajectories)
    summed = sum(t.duration_s for t in trajectories)
    print(f"{solved}/{len(trajectories)} solved; wall {wall:.1f}s for {summed:.1f}s of episodes", end=" ")
    print(f"({limit} at a time)")
    return trajectories


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--envs", default="bash,sql,python", help="comma-separated env names")
    parser.add_argument("--strategy", default="react", help="try_again, react or plan_solve")
    parser.add_argument("--limit", type=int, default=8, help="episodes running at the same time")
    args = parser.parse_args()
    asyncio.run(main(args.envs.split(","), args.strategy, args.limit))

"""k rollouts per task with the local model, written as a dataset a GRPO trainer can learn from.

    python examples/rl_rollouts.py                                   # bash/mini/0 and bash/mini/2, k=4
    python examples/rl_rollouts.py --env sql --tasks mini --k 8 --temperature 0.9 --out runs/rl-sql

Runs offline: the local model (Qwen2.5-Coder-1.5B on the CPU through llama.cpp, `intercode-agents
models fetch`) plays every task k times at once (``play_group``), each sample with a seed of its own,
with the ReAct strategy and ``record_tokens=True``. For every task it writes one group to
``OUT/groups.jsonl``, one row per sample:

- ``group`` (the task id), ``sample``, ``reward``, ``outcome`` and ``advantage``: the reward minus the
  group's mean, over the group's standard deviation (0 for a group whose rewards are all equal, which
  teaches GRPO nothing: the summary counts the groups that do teach);
- ``prompt`` and ``completion``: the episode as text, for reading (the task; each thought, action
  and observation);
- ``prompt_ids``, ``completion_ids``, ``completion_mask`` and ``logprobs``: the exact token sequence
  the model read and wrote, the env's observations at mask 0, the sampler's logprobs (what a trainer
  computes its loss and importance ratios on); where an episode is no single sequence,
  ``turn_samples`` holds each model call instead.

The full records go to ``OUT/trajectories.jsonl`` (``intercode-agents report OUT`` reads them). On a
2-core machine each model call takes seconds to a minute: keep ``--k``, ``--turns`` and
``--max-tokens`` small.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
from pathlib import Path
from typing import Any

from intercode_agents.datasets import select_tasks
from intercode_agents.models import resolve_model
from intercode_agents.runner.groups import play_group
from intercode_agents.runner.players import StrategyPlayer
from intercode_agents.runner.run_dir import RecordWriter
from intercode_agents.runner.token_sequences import NotAPrefix, episode_sequence, turn_samples
from intercode_agents.strategies import get_strategy
from intercode_agents.trajectory import Trajectory


def as_text(traj: Trajectory) -> str:
    """The episode as the model lived it, for a reader (the exact tokens are in the id fields)."""
    lines = []
    for step in traj.steps:
        if step.thought:
            lines.append(f"Thought: {step.thought}")
        lines.append(f"Action: {step.action}")
        lines.append(f"Observation: {step.observation}")
    return "\n".join(lines)


def rows(group: list[Trajectory]) -> list[dict[str, Any]]:
    rewards = [t.reward or 0.0 for t in group]
    mean, spread = statistics.fmean(rewards), statistics.pstdev(rewards)
    written = []
    for traj, reward in zip(group, rewards, strict=True):
        row: dict[str, Any] = {
            "group": traj.task_id,
            "sample": traj.epoch,
            "seed": traj.seed,
            "reward": reward,
            "outcome": traj.outcome,
            "advantage": (reward - mean) / spread if spread > 0 else 0.0,
            "prompt": traj.question,
            "completion": as_text(traj),
        }
        try:
            sequence = episode_sequence(traj)
            row |= {
                "prompt_ids": sequence.prompt_ids,
                "completion_ids": sequence.completion_ids,
                "completion_mask": sequence.completion_mask,
                "logprobs": sequence.logprobs,
            }
        except NotAPrefix as exc:
            row["turn_samples"] = (
                [call.model_dump() for call in turn_samples(traj)] if traj.turn_tokens else []
            )
            row["token_note"] = str(exc)
        written.append(row)
    return written


async def main(args: argparse.Namespace) -> None:
    model = resolve_model("local", temperature=args.temperature, max_tokens=args.max_tokens)
    strategy = get_strategy("react", max_turns=args.turns, demos=False, record_tokens=True)
    player = StrategyPlayer(strategy, model, "local")
    tasks = [task.id for task in select_tasks(args.env, args.tasks)]
    args.out.mkdir(parents=True, exist_ok=True)
    teaching = 0
    with (
        (args.out / "groups.jsonl").open("w") as dataset,
        RecordWriter(args.out / "trajectories.jsonl") as log,
    ):
        for task_id in tasks:
            group = await play_group(args.env, task_id, args.k, player, seed=args.seed)
            for traj in group:
                log.write(traj)
            for row in rows(group):
                dataset.write(json.dumps(row) + "\n")
            rewards = [t.reward for t in group]
            teaching += len(set(rewards)) > 1
            print(f"{task_id}: rewards {rewards}", flush=True)
    print(
        f"{len(tasks)} groups of {args.k} in {args.out / 'groups.jsonl'}; {teaching} with rewards that differ"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--env", default="bash")
    parser.add_argument("--tasks", default="bash/mini/0,bash/mini/2", help="a task selector")
    parser.add_argument("--k", type=int, default=4, help="samples per task (the group's size)")
    parser.add_argument("--turns", type=int, default=2, help="model turns per episode")
    parser.add_argument(
        "--temperature", type=float, default=0.8, help="sampling temperature (>0: samples differ)"
    )
    parser.add_argument("--max-tokens", type=int, default=96, help="tokens per model reply")
    parser.add_argument(
        "--seed", type=int, default=0, help="the first sample's seed (sample i: seed + i - 1)"
    )
    parser.add_argument("--out", type=Path, default=Path("runs/rl_rollouts"))
    asyncio.run(main(parser.parse_args()))

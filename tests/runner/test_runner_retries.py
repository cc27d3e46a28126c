"""Bounded retries of env and model errors: only the last attempt is recorded, a persistent error is
recorded once, excluded and listed, and ``--resume --retry-errors`` plays recorded errors again.

Engine faults are injected at the env's reset hook (``BashEnv._prepare``), raising the sandbox layer's
own ``SessionDied`` before the real reset runs; everything else is the real env on the real engine."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from intercode_agents.datasets import get_task
from intercode_agents.envs.bash.env import BashEnv
from intercode_agents.errors import ConfigError, SessionDied
from intercode_agents.report import load_run
from intercode_agents.runner.config import EvalConfig
from intercode_agents.runner.eval import run_eval
from intercode_agents.runner.players import GoldPlayer
from intercode_agents.runner.retries import NO_RETRIES, RetryPolicy, play_with_retries
from intercode_agents.runner.run_dir import read_records
from intercode_agents.runner.workers import Episode, run_episodes
from intercode_agents.trajectory import Trajectory

os.environ.setdefault("INTERCODE_DATA", "/work/shared/intercode-data")
FAULT = "injected engine fault: the container stopped"


class EngineFaults:
    """Makes ``BashEnv`` resets of chosen tasks fail ``times`` times (None: always) before the real reset."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, tasks: set[str], times: int | None) -> None:
        self.tasks, self.times, self.calls = tasks, times, Counter[str]()
        real = BashEnv._prepare

        async def prepare(env: BashEnv, task: object) -> None:
            task_id = task.id  # type: ignore[attr-defined]
            self.calls[task_id] += 1
            if task_id in self.tasks and (self.times is None or self.calls[task_id] <= self.times):
                raise SessionDied(FAULT)
            await real(env, task)  # type: ignore[arg-type]

        monkeypatch.setattr(BashEnv, "_prepare", prepare)


async def test_an_env_fault_that_passes_is_retried_and_recorded_once_as_solved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    faults = EngineFaults(monkeypatch, {"bash/mini/0"}, times=2)
    out = tmp_path / "run"
    result = await run_eval(
        EvalConfig(
            env="bash", model="gold", selector="bash/mini/0", out_dir=out, retry_wait_s=0.01, progress=False
        )
    )
    records, _ = read_records(out / "trajectories.jsonl")
    assert len(records) == 1 and faults.calls["bash/mini/0"] == 3
    (traj,) = records
    assert traj.outcome == "solved" and traj.attempts == 3
    assert [(r.outcome, FAULT in (r.error or "")) for r in traj.retries] == [("env_error", True)] * 2
    assert result.summary["success_rate"] == 1.0 and result.summary["excluded"]["episodes"] == []
    assert result.summary["retried"] == {"episodes": 1, "failed_attempts": 2}


async def test_a_persistent_env_fault_is_recorded_once_excluded_listed_and_replayed_on_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "run"
    selector = "bash/mini/0,bash/mini/1,bash/mini/2"
    faults = EngineFaults(monkeypatch, {"bash/mini/1"}, times=None)
    first = await run_eval(
        EvalConfig(
            env="bash",
            model="gold",
            selector=selector,
            out_dir=out,
            retry_errors=3,
            retry_wait_s=0.01,
            progress=False,
        )
    )
    assert faults.calls == {"bash/mini/0": 1, "bash/mini/1": 4, "bash/mini/2": 1}  # 1 + 3 retries
    records, _ = read_records(out / "trajectories.jsonl")
    assert sorted(r.task_id for r in records) == selector.split(",")
    broken = next(r for r in records if r.task_id == "bash/mini/1")
    assert broken.outcome == "env_error" and broken.attempts == 4 and FAULT in (broken.error or "")
    s = first.summary
    assert s["denominator"] == {"planned": 3, "recorded": 3, "scored": 2, "excluded": 1, "not_run": 0}
    assert s["success_rate"] == 1.0
    assert [(e["task_id"], e["reason"], e["attempts"]) for e in s["excluded"]["episodes"]] == [
        ("bash/mini/1", "env_error", 4)
    ]

    # a plain resume keeps the recorded error; with --retry-errors only that episode is played again
    plain = await run_eval(
        EvalConfig(env="bash", model="gold", selector=selector, out_dir=out, resume=True, progress=False)
    )
    assert plain.new_episodes == 0 and plain.summary["excluded"]["counts"]["env_error"] == 1
    monkeypatch.undo()
    faults = EngineFaults(monkeypatch, set(), times=None)
    again = await run_eval(
        EvalConfig(
            env="bash",
            model="gold",
            selector=selector,
            out_dir=out,
            resume=True,
            retry_errors=1,
            progress=False,
        )
    )
    assert faults.calls == {"bash/mini/1": 1}
    assert (again.new_episodes, again.resumed_episodes, again.replayed_errors) == (1, 2, 1)
    assert again.summary["success_rate"] == 1.0 and again.summary["n_scored"] == 3
    assert again.summary["excluded"]["episodes"] == [] and again.summary["n_episodes"] == 3
    lines, _ = read_records(out / "trajectories.jsonl")
    assert len(lines) == 4  # nothing is rewritten: the recorded error stays on disk
    replayed = lines[-1]
    assert (replayed.task_id, replayed.outcome, replayed.attempts) == ("bash/mini/1", "solved", 5)
    run = load_run(out)  # the report counts as the resume did
    assert run.superseded == 1 and run.ignored == [] and run.summary["success_rate"] == 1.0


async def test_a_real_engine_fault_is_retried_within_its_bound() -> None:
    broken = get_task("bash/mini/0").model_copy(update={"image": "no-such-image-for-tests"})
    policy = RetryPolicy(env_error=2, wait_s=0.0)
    (traj,) = await run_episodes("bash", [Episode(broken, seed=3, epoch=1)], GoldPlayer(), retry=policy)
    assert traj.outcome == "env_error" and traj.attempts == 3 and traj.seed == 3
    assert all("no-such-image-for-tests" in (r.error or "") for r in traj.retries)


def outcome_sequence(outcomes: list[str]) -> tuple[list[str], object]:
    played: list[str] = []

    async def play() -> Trajectory:
        outcome = outcomes[len(played)]
        played.append(outcome)
        return Trajectory(task_id="t", env="bash", strategy="s", model="m", outcome=outcome, input_tokens=10)

    return played, play


@pytest.mark.parametrize(
    ("policy", "outcomes", "played", "recorded"),
    [
        (RetryPolicy(wait_s=0), ["env_error", "env_error", "solved"], 3, "solved"),
        (RetryPolicy(wait_s=0), ["env_error"] * 5, 3, "env_error"),  # default: 2 retries
        (RetryPolicy(wait_s=0), ["model_error", "solved"], 1, "model_error"),  # default: no retry
        (RetryPolicy.from_option(2, wait_s=0), ["model_error", "env_error", "failed"], 3, "failed"),
        (RetryPolicy(wait_s=0), ["failed", "solved"], 1, "failed"),  # the agent's outcomes are final
        (RetryPolicy(wait_s=0), ["timeout", "solved"], 1, "timeout"),
        (RetryPolicy(wait_s=0), ["corrupt", "solved"], 1, "corrupt"),
        (NO_RETRIES, ["env_error", "solved"], 1, "env_error"),
    ],
)
async def test_retry_bounds(policy: RetryPolicy, outcomes: list[str], played: int, recorded: str) -> None:
    log, play = outcome_sequence(outcomes)
    traj = await play_with_retries(play, policy)  # type: ignore[arg-type]
    assert len(log) == played and traj.outcome == recorded and traj.attempts == played
    assert [r.input_tokens for r in traj.retries] == [10] * (played - 1)


def test_bad_retry_options_are_clear_errors() -> None:
    with pytest.raises(ConfigError, match="--retry-errors must be a whole number >= 0"):
        RetryPolicy.from_option(-1)
    with pytest.raises(ConfigError, match="retries of env_error"):
        RetryPolicy(env_error=True)  # type: ignore[arg-type]
    assert RetryPolicy().wait(1) == 1.0 and RetryPolicy().wait(3) == 4.0 and RetryPolicy().wait(9) == 8.0

"""examples/rl_rollouts.py, run as a user runs it, offline with the local model (slow: a few minutes on a
busy 2-core machine): one group of two samples of a Bash task, written as rows a GRPO trainer reads,
each with its reward, its group-normalised advantage and its exact token sequence."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from tests import ROOT


@pytest.mark.slow
def test_the_example_writes_a_group_with_rewards_advantages_and_masked_sequences(
    tmp_path: Path,
) -> None:
    command = [sys.executable, str(ROOT / "examples" / "rl_rollouts.py"), "--tasks", "bash/mini/0"]
    command += ["--k", "2", "--turns", "1", "--max-tokens", "48", "--out", str(tmp_path)]
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "1 groups of 2" in done.stdout
    rows = [json.loads(line) for line in (tmp_path / "groups.jsonl").read_text().splitlines()]
    assert [(row["group"], row["sample"], row["seed"]) for row in rows] == [
        ("bash/mini/0", 1, 0),
        ("bash/mini/0", 2, 1),
    ]
    rewards = [row["reward"] for row in rows]
    assert all(0.0 <= reward <= 1.0 for reward in rewards)
    spread = statistics.pstdev(rewards)
    for row in rows:
        expected = (row["reward"] - statistics.fmean(rewards)) / spread if spread else 0.0
        assert row["advantage"] == pytest.approx(expected)
        assert row["prompt"] and "Action:" in row["completion"]
        ids, mask, logprobs = row["completion_ids"], row["completion_mask"], row["logprobs"]
        assert row["prompt_ids"] and ids and len(ids) == len(mask) == len(logprobs)
        assert set(mask) <= {0, 1} and sum(mask) > 0
        assert all(lp <= 0.0 for lp in logprobs) and all(
            lp == 0.0 for lp, m in zip(logprobs, mask, strict=True) if not m
        )
    records = [json.loads(line) for line in (tmp_path / "trajectories.jsonl").read_text().splitlines()]
    assert sorted(record["epoch"] for record in records) == [1, 2]
    assert all(record["turn_tokens"] for record in records)

"""An eval with the local model end to end: 3 Bash test tasks, Try Again, 2 turns (no success asserted)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CLI = [sys.executable, "-c", "from intercode_agents.cli import main; main()"]


@pytest.mark.slow
def test_local_model_try_again_eval_runs_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "local"
    args = ["eval", "bash", "--strategy", "try_again", "--model", "local", "--tasks", "test", "--limit", "3"]
    env = {**os.environ, "INTERCODE_DATA": os.environ.get("INTERCODE_DATA", "/work/shared/intercode-data")}
    result = subprocess.run(
        [*CLI, *args, "--turns", "2", "--out", str(out), "--no-progress"],
        env=env,
        capture_output=True,
        text=True,
        timeout=1500,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    records = [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]
    assert sorted(r["task_id"] for r in records) == ["bash/test/0", "bash/test/1", "bash/test/2"]
    for record in records:
        assert record["strategy"] == "try_again" and record["model"].startswith("local:")
        assert record["outcome"] in ("solved", "failed"), record["error"]
        assert record["reward"] is not None and 0.0 <= record["reward"] <= 1.0
        assert record["steps"][-1]["kind"] == "submit"
        assert sum(s["kind"] != "submit" for s in record["steps"]) <= 2  # the turn budget
        assert record["input_tokens"] > 0 and record["output_tokens"] > 0
    assert any(s["kind"] == "action" for r in records for s in r["steps"])  # replies parsed into actions
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_episodes"] == 3 and summary["turn_budget"] == 2

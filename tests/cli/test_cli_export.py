"""``export atif``, ``eval --atif``, and ``view``/``report`` of runs made elsewhere, as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

from intercode_agents.integrations.atif import schema
from tests import ROOT
from tests.cli.test_cli_run_commands import cli

EXAMPLE = str(ROOT / "examples" / "own_agent.py")


def test_eval_writes_atif_as_it_goes_and_export_writes_the_same(tmp_path: Path) -> None:
    cache = {"INTERCODE_AGENTS_CACHE": str(tmp_path / "cache")}
    run, live, later = tmp_path / "run", tmp_path / "live", tmp_path / "later"
    done = cli(
        [
            "eval",
            "bash",
            "--agent",
            f"{EXAMPLE}:build",
            "--tasks",
            "bash/mini/0",
            "--out",
            str(run),
            "--atif",
            str(live),
        ]
    )
    assert done.returncode == 0, done.stderr
    (written,) = live.glob("*.json")
    assert written.name == "bash__mini__0.epoch1.json"
    document = schema.validate_file(written)
    assert document.final_metrics is not None and document.final_metrics.extra["outcome"] == "solved"  # type: ignore[index]
    exported = cli(["export", "atif", str(run), "--out", str(later)])
    assert exported.returncode == 0 and "wrote 1 ATIF trajectories (ATIF-v1.7)" in exported.stdout
    assert json.loads((later / written.name).read_text()) == json.loads(written.read_text())
    # ours and the same run read back from its ATIF files, side by side in one report
    both = cli(["report", str(run), str(later), "-o", str(tmp_path / "cmp.html")], env=cache)
    assert both.returncode == 0, both.stderr
    summary = (tmp_path / "cmp.md").read_text()
    assert "| Success rate | 100.0% (1 of 1 scored) | 100.0% (1 of 1 scored) |" in summary
    assert "| Mean turns | 2.00 | 2.00 |" in summary and "cache/imports/later-" in summary
    viewed = cli(["view", str(later), "--print"], env=cache)
    assert viewed.returncode == 0, viewed.stderr
    assert str(tmp_path / "cache" / "imports") in viewed.stdout


def test_export_errors_are_one_line(tmp_path: Path) -> None:
    missing = cli(["export", "atif", str(tmp_path / "nope"), "--out", str(tmp_path / "o")])
    assert missing.returncode == 2 and "has no trajectories.jsonl" in missing.stderr
    (tmp_path / "bad.json").write_text('{"schema_version": "ATIF-v1.7", "agent": {}}')
    bad = cli(
        ["view", str(tmp_path / "bad.json"), "--print"], env={"INTERCODE_AGENTS_CACHE": str(tmp_path / "c")}
    )
    assert (
        bad.returncode == 2
        and "is not a valid ATIF trajectory" in bad.stderr
        and "Traceback" not in bad.stderr
    )

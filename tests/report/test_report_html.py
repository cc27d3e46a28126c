"""write_report on run directories built from hand-made records: content, escaping, summaries, errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from intercode_agents.errors import ConfigError
from intercode_agents.metrics.summary import summarize
from intercode_agents.report import load_run, write_report
from intercode_agents.trajectory import FailedAttempt, Step, Trajectory

EVIL = "<script>alert(1)</script>|x"


def record(task: int, outcome: str, turns: int, *, strategy: str, model: str, fs: str) -> Trajectory:
    steps = [Step(turn=t, action=f"ls dir{t}", observation="a.txt") for t in range(1, turns + 1)]
    if outcome == "solved":
        steps[-1].reward = 1.0
    return Trajectory(
        task_id=f"bash/{fs}/{task}",
        env="bash",
        strategy=strategy,
        model=model,
        group={"fs": fs},
        steps=steps,
        reward=1.0 if outcome == "solved" else 0.0,
        outcome=outcome,
    )


def write_run(directory: Path, records: list[Trajectory], extra_lines: tuple[str, ...] = ()) -> Path:
    directory.mkdir(parents=True)
    lines = [r.model_dump_json() for r in records] + list(extra_lines)
    (directory / "trajectories.jsonl").write_text("\n".join(lines) + "\n")
    return directory


@pytest.fixture
def two_runs(tmp_path: Path) -> list[Path]:
    # run A: solved on turns 1 and 2, one failure after 3 turns -> curve 1/3, 2/3, 2/3
    run_a = write_run(
        tmp_path / "runs" / "a",
        [
            record(0, "solved", 1, strategy="try_again", model="local", fs="fs1"),
            record(1, "solved", 2, strategy="try_again", model="local", fs="fs1"),
            record(2, "failed", 3, strategy="try_again", model="local", fs="fs2"),
        ],
        extra_lines=('{"task_id": "cut off', "", "[1, 2]"),  # 2 corrupt lines, 1 blank line
    )
    # run B: a label that needs escaping; one solve on turn 2 out of 2 tasks -> curve 0, 1/2
    run_b = write_run(
        tmp_path / "runs" / "b",
        [
            record(0, "solved", 2, strategy="react", model=EVIL, fs="fs1"),
            record(1, "failed", 1, strategy="react", model=EVIL, fs="fs2"),
        ],
    )
    return [run_a, run_b]


def series_values(html: str, run: int) -> list[str]:
    return re.findall(rf'<g class="series" data-run="{run}" data-label="[^"]*" data-values="([^"]*)">', html)


def test_report_has_a_chart_series_per_run(two_runs: list[Path]) -> None:
    html_path, md_path = write_report(two_runs)
    assert (html_path, md_path) == (two_runs[0].parent / "report.html", two_runs[0].parent / "report.md")
    html = html_path.read_text()
    # 4 charts: turn curve, success by fs, failure modes, turns histogram
    assert html.count("<svg") == 4
    assert len(series_values(html, 0)) == len(series_values(html, 1)) == 4
    curve_a, by_fs_a = series_values(html, 0)[:2]
    curve_b, by_fs_b = series_values(html, 1)[:2]
    assert curve_a == "0.3333,0.6667,0.6667"
    assert curve_b == "0.0000,0.5000"
    assert by_fs_a == "1.0000,0.0000" and by_fs_b == "1.0000,0.0000"  # fs1, fs2
    assert html.count("<polyline") == 2
    # the episodes travel as data: A has fs1/0, fs1/1, fs2/2; B has fs1/0, fs2/1
    data = json.loads(
        re.search(r'<script type="application/json" id="report-data">(.*?)</script>', html, re.S)[1]
    )
    rows = [[row[0] for row in run["rows"]] for run in data["runs"]]
    assert rows == [["bash/fs1/0", "bash/fs1/1", "bash/fs2/2"], ["bash/fs1/0", "bash/fs2/1"]]
    failed = data["runs"][0]["rows"][2]
    assert data["outcomes"][failed[2]] == "failed" and failed[3] == 0.0 and failed[4] == 3  # reward, turns
    detail = json.loads(data["runs"][0]["details"][2])
    assert [s["action"] for s in detail["steps"]] == ["ls dir1", "ls dir2", "ls dir3"]


def test_report_escapes_records_and_stays_offline(two_runs: list[Path]) -> None:
    html = write_report(two_runs)[0].read_text()
    assert html.count("<script") == 2  # the page's own: its data and its app; the record's never
    assert "&lt;script&gt;alert(1)&lt;/script&gt;|x" in html  # in the markup, escaped
    assert "\\u003cscript\\u003ealert(1)\\u003c/script\\u003e|x" in html  # in the data, JSON-escaped
    assert "http://" not in html and "https://" not in html
    assert "src=" not in html and "href=" not in html
    assert "default-src 'none'" in html  # nothing is fetched, whatever the page holds


def test_markdown_summary(two_runs: list[Path]) -> None:
    md = write_report(two_runs)[1].read_text()
    assert "| Success rate | 66.7% (2 of 3 scored) | 50.0% (1 of 2 scored) |" in md
    # the record's model name is HTML- and Markdown-escaped, so it neither renders HTML nor splits a cell
    assert "react · &lt;script&gt;alert(1)&lt;/script&gt;\\|x" in md
    assert "<script" not in md
    row = next(line for line in md.splitlines() if line.startswith("| try\\_again"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    # episodes, records not counted (2 unreadable lines), where the plan came from
    assert cells[4:7] == [
        "3 recorded = 3 scored + 0 excluded",
        "2",
        "no run.json: foreign records cannot be told apart",
    ]


def test_the_report_counts_the_records_never_a_summary_json(two_runs: list[Path]) -> None:
    run_a = two_runs[0]
    summary = summarize(list(load_run(run_a).trajectories.values()))
    summary["success_rate"], summary["n_solved"] = 1.0, 3  # an edited (or stale) summary.json
    (run_a / "summary.json").write_text(json.dumps(summary))
    run = load_run(run_a)
    assert run.summary["success_rate"] == pytest.approx(2 / 3) and run.summary["n_solved"] == 2
    assert "| Success rate | 66.7% (2 of 3 scored) |" in write_report([run_a])[1].read_text()


def test_a_retry_replaces_a_recorded_error_but_a_duplicate_never_counts(tmp_path: Path) -> None:
    first = record(0, "env_error", 1, strategy="react", model="local", fs="fs1")
    copy = record(0, "solved", 1, strategy="react", model="local", fs="fs1")  # same attempt: a duplicate
    retry = copy.model_copy(update={"retries": [FailedAttempt.of(first)]})
    run = load_run(write_run(tmp_path / "dup", [first, copy]))
    assert [t.outcome for t in run.trajectories.values()] == ["env_error"]
    assert [(i.line, i.why) for i in run.ignored] == [(2, "a duplicate of the record on line 1")]
    run = load_run(write_run(tmp_path / "retry", [first, retry, copy]))
    assert run.superseded == 1 and [t.outcome for t in run.trajectories.values()] == ["solved"]
    assert [(i.line, i.why) for i in run.ignored] == [(3, "a duplicate of the record on line 2")]


def test_output_location(two_runs: list[Path], tmp_path: Path) -> None:
    html, md = write_report(two_runs[:1])
    assert html == two_runs[0] / "report.html" and md == two_runs[0] / "report.md"
    html, md = write_report(two_runs, tmp_path / "out" / "cmp.html")
    assert html.is_file() and md == tmp_path / "out" / "cmp.md" and md.is_file()
    html, _ = write_report(two_runs, tmp_path / "outdir")
    assert html == tmp_path / "outdir" / "report.html"


def test_bad_run_directories(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="at least one run directory"):
        write_report([])
    with pytest.raises(ConfigError, match="does not exist"):
        write_report([tmp_path / "missing"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match=r"has no trajectories\.jsonl"):
        write_report([tmp_path / "empty"])


def test_the_report_shows_the_guarded_comparison_columns(tmp_path: Path) -> None:
    recovered = Trajectory(
        task_id="bash/fs1/0",
        env="bash",
        strategy="guarded",
        model="local",
        steps=[
            Step(turn=1, action="cat nope", observation="No such file", exit_code=1, errored=True),
            Step(turn=2, action="ls", observation="a.txt", reward=1.0),
        ],
        reward=1.0,
        outcome="solved",
    )
    refused = Trajectory(
        task_id="bash/fs1/1",
        env="bash",
        strategy="guarded",
        model="local",
        steps=[Step(turn=1, kind="refused", action="rm -r /testbed", errored=True, refusal="destroys it")],
        reward=0.0,
        outcome="failed",
    )
    md = write_report([write_run(tmp_path / "run", [recovered, refused])])[1].read_text()
    assert "| Completion | 50.0% |" in md
    assert "| Recovery within 3 turns of an error | 50.0% (1 of 2) |" in md
    assert "| Safeguards: refusals / checkpoints / rollbacks / vetoes | 1 / 0 / 0 / 0 |" in md

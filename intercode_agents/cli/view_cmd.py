"""``view``: open a run's report in a browser, or print its path where there is none."""

from __future__ import annotations

import os
import sys
import webbrowser
from pathlib import Path
from typing import Annotated

import typer

from intercode_agents.cli.app import app, console, friendly
from intercode_agents.errors import ConfigError

REPORT = "report.html"
TRAJECTORIES = "trajectories.jsonl"  # as in intercode_agents.runner.run_dir, not imported at start-up


def has_display() -> bool:
    """Whether a graphical browser can open here: macOS and Windows, or a Linux/BSD desktop session."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def report_of(path: Path) -> Path:
    """The report of a run directory (written or refreshed when the records are newer), a comparison
    directory (its runs' report), an HTML file, or runs made elsewhere (an Inspect log, ATIF files,
    or a folder of them: imported as runs of their own first)."""
    from intercode_agents.report import write_report

    if path.is_file() and path.suffix.lower() in (".html", ".htm"):
        return path
    if not path.exists():
        raise ConfigError(f"{path} does not exist: give a run directory (or a folder of runs)")
    report = path / REPORT
    records = path / TRAJECTORIES
    runs = [records.parent] if records.is_file() else sorted(p.parent for p in path.glob(f"*/{TRAJECTORIES}"))
    if not runs and path.is_dir() and report.is_file() and not _foreign(path):
        return report
    if not runs:
        from intercode_agents.integrations.foreign_runs import report_path, runs_of

        runs = runs_of(path)
        report = report_path(path, runs)
    newest = max((run / TRAJECTORIES).stat().st_mtime for run in runs)
    if not report.is_file() or report.stat().st_mtime < newest:
        write_report(runs, report)
    return report


def _foreign(path: Path) -> bool:
    """Whether a folder holds an Inspect log or ATIF trajectories (runs made elsewhere)."""
    return any(p.suffix in (".eval", ".json") for p in path.rglob("*"))


@app.command("view")
@friendly
def view_cmd(
    run_dir: Annotated[
        Path,
        typer.Argument(
            help="A run directory, a folder of runs, a report.html, or runs made elsewhere: an Inspect "
            "log (.eval, .json), ATIF trajectories, or a folder of them."
        ),
    ],
    print_only: Annotated[bool, typer.Option("--print", help="Only print the report's path.")] = False,
) -> None:
    """Open a run's HTML report (trajectories, filters, run-vs-run comparison) in a browser.

    The report is written first when it is missing or older than the records. Where no browser can
    open (no desktop session, or --print), its path and file:// address are printed: open them
    yourself, or copy the one file elsewhere (it needs no server and no network).

    Runs made elsewhere are read into runs of ours first (in the user cache), so they open in the
    same viewer: an Inspect log (our intercode task's or any other), ATIF trajectory files (ours,
    Harbor's: a job folder's <trial>/agent/trajectory.json with its verifier's reward).

    Examples:
      intercode-agents view runs/demo
      intercode-agents view runs/cmp --print
      intercode-agents view logs/2026-06-20T10-00-00_intercode_abc.eval
      intercode-agents view jobs/my-harbor-job
    """
    report = report_of(run_dir).resolve()
    uri = report.as_uri()
    if not print_only and has_display() and webbrowser.open(uri):
        console.print(f"opened {report}", highlight=False)
        return
    console.print(f"report: {report}\nopen {uri} in a browser", highlight=False, soft_wrap=True)

"""``tasks``: list tasks, splits and availability."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from intercode_agents.cli.app import app, console, friendly


@app.command("tasks")
@friendly
def tasks(
    env: Annotated[
        str,
        typer.Argument(help="bash, sql, python, ctf, or the path of an env YAML (see examples/custom_env)."),
    ],
    select: Annotated[str | None, typer.Option("--tasks", "-t", help="Task selector (see below).")] = None,
    show_all: Annotated[bool, typer.Option("--all", help="Include unavailable tasks.")] = False,
    limit: Annotated[int, typer.Option(help="Rows to show (0: all).")] = 20,
) -> None:
    """List an env's tasks, its splits, and which tasks cannot run here (and why).

    Selector: comma-separated split names (fs1, test, mini, spider, ...), task ids, positions, id
    globs (bash/fs1/*) and key=value filters on public fields (hardness=easy, db=poker_player,
    tag=Forensics, entry_point=...; never a gold, a test or a set-up script), at most 256 terms.

    Task ids end in the task's position in its split's file (0-based) for Bash, SQL, HumanEval and
    every mini set (bash/fs1/3 is the 4th task of fs1; python/humaneval/0 is HumanEval/0), but in
    the task's own id for Python's MBPP (python/mbpp/11 is MBPP task 11, the file's 11th record,
    position 10) and for picoCTF (ctf/42).
    A position works the same way in every env: SPLIT/#N or SPLIT/#A-B (python/mbpp/#10 is MBPP
    task 11; bash/fs1/#3 is bash/fs1/3). The # keeps the two forms apart, so they never clash:
    python/mbpp/10 is always MBPP's id 10, python/mbpp/#10 always the 11th record.

    Examples:
      intercode-agents tasks bash --tasks test
      intercode-agents tasks sql --tasks "spider,hardness=extra" --limit 0
      intercode-agents tasks python --tasks "python/mbpp/11,python/mbpp/#0-4"
      intercode-agents tasks ctf --all
      intercode-agents tasks python --tasks humaneval
      intercode-agents tasks examples/custom_env/jq.yaml
    """
    from intercode_agents.datasets import select_tasks, split_names

    chosen = select_tasks(env, select, include_unavailable=show_all)
    console.print(f"[bold]{env}[/] splits: {', '.join(split_names(env))}")
    table = Table("id", "group", "question", "status")
    shown = chosen if limit <= 0 else chosen[:limit]
    for task in shown:
        group = " ".join(f"{k}={v}" for k, v in task.group.items())
        status = f"[red]unavailable: {task.unavailable}[/]" if task.unavailable else "ok"
        table.add_row(task.id, group, task.query[:80], status)
    console.print(table)
    unavailable = sum(1 for t in chosen if t.unavailable)
    console.print(f"{len(chosen)} tasks selected ({unavailable} unavailable); showing {len(shown)}")

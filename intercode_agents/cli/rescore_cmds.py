"""``rescore``: re-score trajectory files of the original InterCode harness in this harness."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any

import typer

from intercode_agents.cli.app import app, console, err_console, friendly
from intercode_agents.cli.run_cmds import (
    INTERRUPTED_EXIT,
    ConcurrencyOpt,
    ExecutionOpt,
    ProgressOpt,
    RewardOpt,
)


def finite(value: Any) -> Any:
    """``value`` as strict JSON: numbers that JSON cannot hold (NaN, infinities) become null, and any
    other object its text."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    if value is None or isinstance(value, str | int | bool):
        return value
    return str(value)


@app.command("rescore")
@friendly
def rescore_cmd(
    logs: Annotated[list[Path], typer.Argument(help="Trajectory files of the original harness (.json).")],
    env: Annotated[
        str | None,
        typer.Option(
            "--env", help="Override the detected tasks: bash/fs1..fs4, bash/test, sql, python, ctf."
        ),
    ] = None,
    execution: ExecutionOpt = "session",
    reward: RewardOpt = "intercode",
    concurrency: ConcurrencyOpt = 4,
    limit: Annotated[
        int | None, typer.Option(help="Re-score only the first N episodes of each file.")
    ] = None,
    worst: Annotated[int, typer.Option(help="Disagreeing turns listed per file.")] = 10,
    strict_queries: Annotated[
        bool,
        typer.Option(
            "--strict-queries",
            help="Refuse a file when an entry's query differs from the pinned task data (by default that "
            "entry is left out and listed).",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print a machine-readable report.")] = False,
    progress: ProgressOpt = True,
) -> None:
    """Replay the recorded actions of InterCode logs here, scoring each turn where the original's loop
    scored it, and compare: success rates, episodes that flip, the turns that disagree most and why.

    Reads the logs of the original's Try Again, ReAct and Plan & Solve loops. The env and split come
    from each file's environment and dataset fields. --execution paper applies to Bash and CTF files
    (SQL and Python have one execution mode). Entries whose query differs from the pinned data, tasks
    that cannot run here and tasks that cannot be scored as the paper scored them (docs/FIDELITY.md)
    are left out of both sides and listed. Exit code 1 when an episode could not be replayed.

    Examples:
      intercode-agents rescore ../shared/intercode-results/sql/gpt-3.5/*.json -c 8
      intercode-agents rescore ic_bash_multiturn_gpt-3.5_10_turns_fs_1.json --execution paper
      intercode-agents rescore my_log.json --env bash/fs2 --limit 5 --json
    """
    from intercode_agents.envs.bash.paper import EXECUTION_MODES
    from intercode_agents.errors import ConfigError
    from intercode_agents.fidelity.paper_log import match_tasks, read_log
    from intercode_agents.fidelity.rescore import check_options, rescore_file
    from intercode_agents.fidelity.rescore_view import rescore_view
    from intercode_agents.runner.interrupt import Interrupted, run_interruptible

    if execution not in EXECUTION_MODES:
        raise ConfigError(f"unknown execution mode {execution!r}; choose {' or '.join(EXECUTION_MODES)}")
    if worst < 0:
        raise ConfigError(f"--worst must be 0 or more, got {worst}")

    check_options(concurrency, limit, reward)
    for path in logs:  # every file is checked before any is replayed: a bad one costs no replay
        match_tasks(read_log(path, env=env), strict_queries=strict_queries)

    async def run_all() -> list:
        return [
            await rescore_file(
                path,
                env=env,
                execution=execution,
                reward=reward,
                concurrency=concurrency,
                limit=limit,
                strict_queries=strict_queries,
                progress=progress and not as_json,
                console=err_console if as_json else console,
            )
            for path in logs
        ]

    try:
        reports = run_interruptible(run_all)
    except Interrupted as stop:
        err_console.print(f"[yellow]{stop.signame}: stopped; containers were removed.[/]")
        raise typer.Exit(INTERRUPTED_EXIT) from None
    if as_json:
        typer.echo(json.dumps(finite([r.to_json(worst) for r in reports]), indent=2, allow_nan=False))
    else:
        console.print(rescore_view(reports, worst))
    if any(r.errors for r in reports):
        raise typer.Exit(1)

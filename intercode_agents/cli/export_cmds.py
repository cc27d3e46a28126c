"""``export atif`` and ``export harbor``: our runs and tasks in other frameworks' formats."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from intercode_agents.cli.app import app, console, friendly

export_app = typer.Typer(
    help="Write our runs and tasks in other frameworks' formats (ATIF trajectories, Harbor task folders).",
    no_args_is_help=True,
)
app.add_typer(export_app, name="export")


@export_app.command("atif")
@friendly
def export_atif(
    run_dir: Annotated[Path, typer.Argument(help="A run directory (its counted records are written).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="The folder for the ATIF files.")],
) -> None:
    """Write one ATIF-v1.7 trajectory (JSON) per episode of a run.

    Each file holds the question, every step (the model's text, its tool call, the observation, its
    tokens), the token and cost totals, and in final_metrics.extra the reward, its parts, the reward
    mode and the outcome; `intercode-agents view` reads them back. docs/INTEROP.md says what maps to
    what.

    Examples:
      intercode-agents export atif runs/bash-react-local-20260101-120000 --out atif/react
    """
    from intercode_agents.integrations.atif.export import export_run

    written = export_run(run_dir, out)
    console.print(f"wrote {len(written)} ATIF trajectories (ATIF-v1.7) into {out}", highlight=False)


@export_app.command("harbor")
@friendly
def export_harbor(
    tasks: Annotated[
        str, typer.Option("--tasks", "-t", help="The tasks: a selector (ctf/mini/*, sql/mini, bash/fs1).")
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="The folder for the task folders.")],
    reward: Annotated[
        str, typer.Option(help="The reward mode the tests score with (intercode, strict).")
    ] = "intercode",
    env: Annotated[
        str | None, typer.Option(help="The env, when the selector does not start with it.")
    ] = None,
) -> None:
    """Write one Harbor task folder per task (Harbor's task format, schema 1.3): task.toml,
    instruction.md, environment/ (the sandbox's Dockerfile), tests/ (test.sh, our reward code and the
    gold's side) and solution/solve.sh (the gold), plus a README saying what carries over.

    Bash, SQL, Python and CTF tasks. The gold's side is computed by our env, so Bash and SQL exports
    need the Docker engine and the built images.

    Examples:
      intercode-agents export harbor --tasks 'ctf/mini/*' --out harbor/intercode-ctf
      intercode-agents export harbor --tasks 'bash/fs1' --out harbor/intercode-bash --reward strict
    """
    from intercode_agents.integrations.harbor.export import export_tasks

    folders = export_tasks(tasks, out, env=env, mode=reward)
    console.print(
        f"wrote {len(folders)} Harbor task folders (schema 1.3) into {out}; {out / 'README.md'} says what "
        "carries over and which tasks were left out",
        highlight=False,
    )

"""``gold``, ``replay``, ``report`` and ``play``: running episodes from the command line."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperCommand

from intercode_agents.cli.app import app, console, err_console, friendly
from intercode_agents.errors import ConfigError

RewardOpt = Annotated[str, typer.Option("--reward", help="Reward mode: intercode (the paper's) or strict.")]
ConcurrencyOpt = Annotated[int, typer.Option("--concurrency", "-c", help="Episodes running at once.")]
TasksOpt = Annotated[
    str | None,
    typer.Option("--tasks", "--split", "-t", help="Task selector: splits, ids, id globs, key=value filters."),
]
ProgressOpt = Annotated[bool, typer.Option(help="Show the live progress bar.")]
ExecutionOpt = Annotated[
    str,
    typer.Option(
        "--execution",
        help="How actions run: session (the default: a persistent shell or interpreter) or paper (as the "
        "original InterCode ran them; Bash, CTF and Python).",
    ),
]
EnginesOpt = Annotated[
    str | None,
    typer.Option(
        "--engines",
        "--backend",
        envvar="INTERCODE_ENGINES",
        help="Where the sandboxes run: one engine or several, comma-separated, each [TYPE:]ADDRESS"
        "[?slots=N] (unix:///run/d2.sock, tcp://127.0.0.1:2376, podman:unix:///run/podman/podman.sock). "
        "Default: $INTERCODE_ENGINES, else the local Docker engine.",
    ),
]
RayOpt = Annotated[
    str | None,
    typer.Option(
        "--ray",
        metavar="[ADDRESS]",
        help="Play the episodes on a Ray cluster: one actor per node that offers the resource "
        "intercode_slots, each on its node's own engines; this process writes the records. ADDRESS "
        "defaults to $RAY_ADDRESS, else auto (the cluster this machine is part of); put a bare --ray "
        "after the positional arguments, or write --ray=ADDRESS. Needs the ray extra.",
        show_default=False,
    ),
]
INTERRUPTED_EXIT = 130


class RayCommand(TyperCommand):
    """A command whose ``--ray`` may come without its ADDRESS (Typer's options always take one):
    a bare ``--ray`` (last, or before another option) is read as ``--ray=``, Ray's own resolution."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # (Typer's own click Context)
        def bare(i: int) -> bool:
            return args[i] == "--ray" and (i + 1 == len(args) or args[i + 1].startswith("-"))

        return super().parse_args(ctx, ["--ray=" if bare(i) else arg for i, arg in enumerate(args)])


def ray_option(value: str | None) -> str | bool | None:
    """``--ray`` as ``EvalConfig.ray``: None (not given), True (bare: Ray's resolution), an address."""
    if value is None:
        return None
    return value.strip() or True


def parse_settings(items: list[str]) -> dict[str, Any]:
    """``--set KEY=VALUE`` options as strategy settings (each VALUE read as YAML: true, 3, a text)."""
    import yaml

    parsed: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set takes KEY=VALUE, got {item!r}")
        try:
            parsed[key.strip()] = yaml.safe_load(value) if value.strip() else None
        except yaml.YAMLError as exc:
            raise ConfigError(f"--set {key.strip()}: {value!r} is not a value ({exc})") from exc
    return parsed


NODE_STATES = {"up": "up", "lost": "[red]lost[/]", "refused": "[yellow]left out[/]"}


def print_engines(
    engines: list[dict[str, Any]], retried: int, nodes: list[dict[str, Any]] | None = None
) -> None:
    """With several engines, or on Ray: each engine's or node's state at the end, and the episodes
    played again."""
    nodes = nodes or []
    if len(engines) < 2 and not nodes:
        return
    for e in engines if len(engines) > 1 else []:
        state = "[red]not answering[/]" if e["down"] else "up"
        console.print(f"engine {e['engine']}: {state}, {e['slots']} slots", highlight=False)
    for n in nodes:
        state = NODE_STATES.get(n["state"], n["state"])
        why = f" ({n['note']})" if n["note"] and n["state"] != "up" else ""
        console.print(
            f"ray node {n['node'][:8]} on {n['host']}, engine {n['engine']}: {state}{why}, "
            f"{n['slots']} slots, {n['episodes']} attempt(s) played",
            highlight=False,
            soft_wrap=True,
        )
    if retried:
        console.print(
            f"{retried} attempt(s) ended in an env error (an engine or node that stopped answering, say) "
            "and were played again; each episode is recorded once.",
            highlight=False,
        )


@app.command("gold", cls=RayCommand)
@friendly
def gold_cmd(
    env: Annotated[
        str,
        typer.Argument(help="bash, sql, python, ctf, or the path of an env YAML (see examples/custom_env)."),
    ],
    tasks: TasksOpt = None,
    concurrency: ConcurrencyOpt = 4,
    reward: RewardOpt = "intercode",
    as_json: Annotated[bool, typer.Option("--json", help="Print a machine-readable report.")] = False,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Keep the records in this run directory.")
    ] = None,
    progress: ProgressOpt = True,
    engines: EnginesOpt = None,
    ray: RayOpt = None,
) -> None:
    """Replay every selected task's gold answer through its env: it must score 1 (proves the envs).

    Default selection: the env's InterCode set (bash: fs1,fs2,fs3,fs4,test = 224 tasks; sql: spider;
    python: mbpp; ctf: picoctf). Lists the solved, failed and corrupt tasks (a corrupt task's gold fails
    by itself) with their rewards, and the throughput. Exit code 1 when any task fails.

    Examples:
      intercode-agents gold bash
      intercode-agents gold sql --tasks mini --json
      intercode-agents gold python --tasks "python/mbpp/1?" --reward strict -c 8
      intercode-agents gold bash --out runs/gold-bash --ray
    """
    from intercode_agents.report.terminal import gold_view
    from intercode_agents.runner.config import EvalConfig
    from intercode_agents.runner.gold import run_gold
    from intercode_agents.runner.interrupt import Interrupted, run_interruptible

    try:
        report = run_interruptible(
            lambda: run_gold(
                EvalConfig(
                    env=env,
                    selector=tasks,
                    concurrency=concurrency,
                    reward=reward,
                    out_dir=out,
                    progress=progress and not as_json,
                    engines=engines,
                    ray=ray_option(ray),
                ),
                console=err_console if as_json else console,
            )
        )
    except Interrupted as stop:
        err_console.print(f"[yellow]{stop.signame}: stopped; containers were removed.[/]")
        raise typer.Exit(INTERRUPTED_EXIT) from None
    if as_json:
        typer.echo(json.dumps(report.to_json(), indent=2, default=str))
    else:
        console.print(gold_view(report))
        print_engines(report.engines, report.engine_retries, report.nodes)
    if not report.ok:
        raise typer.Exit(1)


@app.command("replay", cls=RayCommand)
@friendly
def replay_cmd(
    trajectories: Annotated[Path, typer.Argument(help="A trajectories.jsonl file (or its run directory).")],
    concurrency: ConcurrencyOpt = 4,
    as_json: Annotated[bool, typer.Option("--json", help="Print a machine-readable report.")] = False,
    progress: ProgressOpt = True,
    engines: EnginesOpt = None,
    ray: RayOpt = None,
) -> None:
    """Re-run the recorded actions in fresh envs and re-score them; list every reward that changed.

    Exit code 1 when any episode's reward changed (nondeterministic actions, a changed env or reward,
    or an edited record).

    Examples:
      intercode-agents replay runs/bash-react-local-20250101-120000/trajectories.jsonl
      intercode-agents replay runs/gold-mini --json
      intercode-agents replay runs/gold-mini --ray=ray://head:10001
    """
    from intercode_agents.report.terminal import replay_view
    from intercode_agents.runner.interrupt import Interrupted, run_interruptible
    from intercode_agents.runner.replay import replay_file
    from intercode_agents.runner.run_dir import TRAJECTORIES

    path = trajectories / TRAJECTORIES if trajectories.is_dir() else trajectories
    try:
        report = run_interruptible(
            lambda: replay_file(
                path,
                concurrency=concurrency,
                progress=progress and not as_json,
                console=err_console if as_json else console,
                engines=engines,
                ray=ray_option(ray),
            )
        )
    except Interrupted as stop:
        err_console.print(f"[yellow]{stop.signame}: stopped; containers were removed.[/]")
        raise typer.Exit(INTERRUPTED_EXIT) from None
    if as_json:
        payload = {
            "replayed": len(report.episodes),
            "changed": [vars(e) for e in report.changed],
            "skipped": [{"task_id": t, "why": why} for t, why in report.skipped],
            "wall_s": round(report.wall_s, 3),
        }
        typer.echo(json.dumps(payload, indent=2, default=str))
    else:
        console.print(replay_view(report))
    if report.changed:
        raise typer.Exit(1)


@app.command("report")
@friendly
def report_cmd(
    run_dirs: Annotated[
        list[Path],
        typer.Argument(
            help="Run directories (several are compared); Inspect logs and ATIF trajectories (or folders "
            "of them) are read as runs too."
        ),
    ],
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="The .html file, or a folder for it.")
    ] = None,
) -> None:
    """Write a static HTML report (and a Markdown summary) of one or more run directories.

    Examples:
      intercode-agents report runs/bash-react-local-20250101-120000
      intercode-agents report runs/react runs/try_again -o reports/compare.html
      intercode-agents report runs/react logs/2026-06-20T10-00-00_intercode_abc.eval -o compare.html
    """
    from intercode_agents.integrations.foreign_runs import runs_of
    from intercode_agents.report import write_report

    html, markdown = write_report([run for path in run_dirs for run in runs_of(path)], out)
    console.print(f"report:  {html}\nsummary: {markdown}", highlight=False)


@app.command("play")
@friendly
def play_cmd(
    env: Annotated[
        str,
        typer.Argument(help="bash, sql, python, ctf, or the path of an env YAML (see examples/custom_env)."),
    ],
    task: Annotated[str | None, typer.Option("--task", help="The task id (default: a random task).")] = None,
    tasks: TasksOpt = None,
    reward: RewardOpt = "intercode",
    turns: Annotated[int | None, typer.Option(help="Turn budget (default: none).")] = None,
) -> None:
    """Play a task yourself at a prompt: type actions, see the output, and the reward at submit.

    A line ending in \\ continues on the next one; wrap multi-line code in ``` lines. `submit` ends
    the episode (Python: `submit FUNCTION_NAME`, CTF: `submit FLAG`); :quit submits as it stands.

    Examples:
      intercode-agents play bash --task bash/mini/0
      intercode-agents play sql --tasks mini
      intercode-agents play python --task python/mbpp/11 --reward strict
    """
    from intercode_agents.datasets import get_task, select_tasks
    from intercode_agents.envs import make_env
    from intercode_agents.runner.interrupt import Interrupted, run_interruptible
    from intercode_agents.runner.players import HumanPlayer
    from intercode_agents.runner.preflight import image_ids
    from intercode_agents.spec import load_spec

    load_spec(env)
    if task:
        chosen = get_task(task)
        if chosen.env != env:
            raise ConfigError(f"task {task} belongs to env {chosen.env!r}, not {env!r}")
    else:
        pool = select_tasks(env, tasks)
        if not pool:
            raise ConfigError(f"the selector {tasks!r} picks no available {env} task")
        chosen = random.choice(pool)

    async def play() -> None:
        await image_ids([chosen])
        async with make_env(env, reward=reward) as session:
            await HumanPlayer(max_turns=turns).play(session, chosen, None)

    try:
        run_interruptible(play)
    except Interrupted as stop:
        err_console.print(f"[yellow]{stop.signame}: stopped; containers were removed.[/]")
        raise typer.Exit(INTERRUPTED_EXIT) from None

"""``eval``: evaluate a strategy, a user's agent, or several models on an env's tasks."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated, Any

import typer

from intercode_agents.cli.app import app, console, err_console, friendly
from intercode_agents.cli.run_cmds import (
    INTERRUPTED_EXIT,
    ConcurrencyOpt,
    EnginesOpt,
    ExecutionOpt,
    ProgressOpt,
    RayCommand,
    RayOpt,
    RewardOpt,
    TasksOpt,
    parse_settings,
    print_engines,
    ray_option,
)
from intercode_agents.errors import ConfigError

DEFAULTS: dict[str, Any] = {
    "turns": 10,
    "concurrency": 1,
    "reward": "intercode",
    "epochs": 1,
    "execution": "session",
}


def resume_command(argv: list[str], out: Path) -> str:
    return shlex.join(["intercode-agents", "eval", *argv, "--out", str(out), "--resume"])


def eval_argv(env: str, models: list[str], options: dict[str, Any]) -> list[str]:
    """The settings of this eval as CLI arguments, in their long form (for the resume hint)."""
    argv = [env]
    for model in models:
        argv += ["--model", model]
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        if value is None or value is False or DEFAULTS.get(name) == value:
            continue
        if value is True:
            argv.append(flag)
        elif name == "ray":  # an optional value: bare, or joined to its flag
            argv.append(f"--ray={value}" if value else "--ray")
        elif isinstance(value, list | tuple):
            for item in value:
                argv += [{"model_setting": "-M", "set": "--set"}.get(name, flag), str(item)]
        else:
            argv += [flag, str(value)]
    return argv


def interrupted(signame: str, dirs: list[Path], totals: list[int], argv: list[str], out: Path) -> typer.Exit:
    from intercode_agents.runner.run_dir import RUN_JSON, TRAJECTORIES, read_run_settings
    from intercode_agents.runner.run_records import RunPlan, read_run_records

    if not any((d / RUN_JSON).is_file() for d in dirs):
        err_console.print(f"[yellow]{signame}: stopped before the run started;[/] nothing was recorded.")
        return typer.Exit(INTERRUPTED_EXIT)
    for directory, total in zip(dirs, totals, strict=True):
        done = 0
        if (directory / RUN_JSON).is_file():
            plan = RunPlan.from_settings(read_run_settings(directory))
            done = len(read_run_records(directory / TRAJECTORIES, plan, bad_lines="ignore").accepted)
        err_console.print(
            f"[yellow]{signame}: stopped cleanly.[/] {done} of {total} episodes are recorded in {directory}; "
            "containers were removed.",
            highlight=False,
        )
    err_console.print("Resume with:", highlight=False)
    err_console.print(f"  {resume_command(argv, out)}", highlight=False, soft_wrap=True)
    return typer.Exit(INTERRUPTED_EXIT)


ModelOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--model",
        "-m",
        help="local, local:PATH.gguf, provider:model, PATH.py:NAME (a chat model of yours), gold (replay "
        "the gold), human. Repeat it to run several models side by side, one directory each.",
    ),
]


@app.command("eval", cls=RayCommand)
@friendly
def eval_cmd(
    env: Annotated[
        str,
        typer.Argument(help="bash, sql, python, ctf, or the path of an env YAML (see examples/custom_env)."),
    ],
    model: ModelOpt = None,
    strategy: Annotated[
        str | None,
        typer.Option(
            "--strategy",
            "-s",
            help="try_again, react, plan_solve, tool_calling, single_shot, guarded, or a Strategy "
            "subclass of yours as PATH.py:Class or package.module:Class (not for gold/human).",
        ),
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            help="Your LangChain agent: PATH.py:FACTORY or package.module:FACTORY, where "
            "FACTORY(tools, model, task) returns a Runnable (create_agent, a LangGraph graph, a chain). "
            "--model is optional with it.",
        ),
    ] = None,
    tasks: TasksOpt = None,
    limit: Annotated[int | None, typer.Option(help="Run only the first N selected tasks.")] = None,
    turns: Annotated[int, typer.Option(help="Turn budget per episode (an agent's: its tool calls).")] = 10,
    epochs: Annotated[
        int, typer.Option(min=1, help="Samples per task, each with its own seed (seed + epoch - 1).")
    ] = 1,
    concurrency: ConcurrencyOpt = 1,
    reward: RewardOpt = "intercode",
    execution: ExecutionOpt = "session",
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Run directory (default: runs/...).")
    ] = None,
    resume: Annotated[bool, typer.Option(help="Continue the run in --out, skipping finished tasks.")] = False,
    retry_errors: Annotated[
        int | None,
        typer.Option(
            "--retry-errors",
            min=0,
            help="Play an episode that ended in env_error or model_error (the harness's or the "
            "provider's fault) again up to N times before recording it. Default: 2 for env_error "
            "(engine hiccups pass in seconds), 0 for model_error (model calls are already retried "
            "inside the episode). With --resume, the recorded errors are played again too.",
        ),
    ] = None,
    seed: Annotated[
        int | None,
        typer.Option(help="Seed of epoch 1, recorded with each episode and given to models that take one."),
    ] = None,
    temperature: Annotated[float | None, typer.Option(help="Sampling temperature of the model.")] = None,
    max_output_tokens: Annotated[
        int | None, typer.Option(min=1, help="Tokens the model may write per reply (its max_tokens).")
    ] = None,
    model_setting: Annotated[
        list[str] | None,
        typer.Option("--model-setting", "-M", help="key=value passed to the model provider (repeatable)."),
    ] = None,
    max_tokens_per_episode: Annotated[
        int | None, typer.Option(min=1, help="Input + output tokens per episode (then: tokens_exhausted).")
    ] = None,
    max_seconds_per_episode: Annotated[
        float | None, typer.Option(help="Wall-clock seconds per episode (then: timeout).")
    ] = None,
    max_cost_per_episode: Annotated[
        float | None, typer.Option(help="Estimated USD per episode (then: cost_exhausted).")
    ] = None,
    max_cost: Annotated[
        float | None,
        typer.Option(
            help="Estimated USD for the whole run: once reached no new episode starts; resume with more."
        ),
    ] = None,
    show_budget: Annotated[
        bool, typer.Option(help="Tell the model what is left of its budgets after each action.")
    ] = False,
    progress: ProgressOpt = True,
    engines: EnginesOpt = None,
    ray: RayOpt = None,
    strategy_setting: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="A strategy setting KEY=VALUE (repeatable; VALUE is read as YAML), e.g. --set critic=false.",
            show_default=False,
        ),
    ] = None,
    atif: Annotated[
        Path | None,
        typer.Option(
            help="Also write each episode as an ATIF-v1.7 trajectory into this folder as it finishes "
            "(several models: one subfolder each). `export atif` writes a whole run's afterwards."
        ),
    ] = None,
) -> None:
    """Evaluate a strategy (or your own agent) and a model on an env's tasks; write records, a summary
    and a report.

    Episodes run concurrently, each finished one is appended to DIR/trajectories.jsonl at once, and
    Ctrl-C (or SIGTERM) stops cleanly and prints the command that resumes the run. One process
    writes a run directory at a time; a second one stops with an error. The summary gives the
    success rate's denominator and lists every excluded episode (corrupt golds, env or model
    errors after the retries) and every record of the directory that was not counted; with
    --epochs, pass@k, mean@k and the per-task spread. An episode stopped by a budget is a failure
    of its own outcome (timeout, tokens_exhausted, cost_exhausted), never excluded.

    Examples:
      intercode-agents eval bash --strategy try_again --model local --tasks test --turns 5
      intercode-agents eval sql -s react -m openai:gpt-4o-mini --tasks "spider,hardness=easy" -c 8
      intercode-agents eval bash --agent examples/own_agent.py:build --tasks bash/mini/0
      intercode-agents eval bash -s my_strategies.py:SecondChance -m local --tasks mini
      intercode-agents eval sql -s react -m local --epochs 5 --temperature 0.7 --tasks mini
      intercode-agents eval sql -s react -m openai:gpt-4o-mini -m anthropic:claude-sonnet-4-5 --out runs/cmp
      intercode-agents eval sql -s react -m openai:gpt-4o-mini --max-cost 5 --max-tokens-per-episode 20000
      intercode-agents eval bash --model gold --tasks bash/mini/* --out runs/gold-mini
      intercode-agents eval bash --strategy react --model local --out runs/r1 --resume --retry-errors 3
      intercode-agents eval bash -s try_again -m openai:gpt-4o-mini --tasks fs1 --execution paper
      intercode-agents eval sql -s guarded -m local --tasks mini --set critic=false --set max_vetoes=1
      intercode-agents eval bash -m gold --engines unix:///var/run/docker.sock,unix:///run/d2.sock -c 8
      intercode-agents eval bash -s react -m local --tasks mini --atif runs/react-atif
      intercode-agents eval bash -s react -m openai:gpt-4o-mini --tasks test --out runs/r --ray
    """
    from intercode_agents.models import parse_model_options
    from intercode_agents.runner.config import EpisodeBudgets, EvalConfig
    from intercode_agents.runner.eval import choose_tasks, default_out_dir, run_eval
    from intercode_agents.runner.interrupt import Interrupted, run_interruptible
    from intercode_agents.runner.several_models import model_dirs, run_models

    models = list(model or [])
    if not models and not agent:
        raise ConfigError("eval needs --model (local, provider:model, gold, ...) or --agent PATH.py:FACTORY")
    if len(models) == 1 and models[0].strip() in ("gold", "human") and strategy:
        err_console.print(
            f"note: --model {models[0]} drives the env directly; --strategy {strategy} is unused"
        )
        strategy = None
    strategy_settings = parse_settings(strategy_setting or [])
    if strategy_settings and not strategy:
        raise ConfigError("--set configures a strategy: pass --strategy too")
    if resume and out is None:
        raise ConfigError("--resume needs the run directory: pass --out DIR together with --resume")
    model_options = list(model_setting or [])
    options: dict[str, Any] = {
        "strategy": strategy,
        "agent": agent,
        "tasks": tasks,
        "limit": limit,
        "turns": turns,
        "epochs": epochs,
        "concurrency": concurrency,
        "reward": reward,
        "execution": execution,
        "seed": seed,
        "retry_errors": retry_errors,
        "temperature": temperature,
        "max_output_tokens": max_output_tokens,
        "model_setting": model_options,
        "max_tokens_per_episode": max_tokens_per_episode,
        "max_seconds_per_episode": max_seconds_per_episode,
        "max_cost_per_episode": max_cost_per_episode,
        "max_cost": max_cost,
        "show_budget": show_budget,
        "set": list(strategy_setting or []),
        "engines": engines,
        "ray": ray,
    }
    settings = parse_model_options(model_options)
    for key, value in (("temperature", temperature), ("max_tokens", max_output_tokens)):
        if value is not None:
            if key in settings:
                raise ConfigError(f"the model setting {key!r} is given twice (by its option and by -M)")
            settings[key] = value
    label = strategy or ("agent" if agent else "direct")
    model_label = models[0] if len(models) == 1 else ("models" if models else "agent-default")
    config = EvalConfig(
        env=env,
        model=models[0] if len(models) == 1 else None,
        strategy=strategy,
        agent=agent,
        strategy_settings=strategy_settings,
        model_settings=settings,
        selector=tasks,
        limit=limit,
        turns=turns,
        epochs=epochs,
        concurrency=concurrency,
        reward=reward,
        execution=execution,
        out_dir=out or default_out_dir(env, label, model_label),
        resume=resume,
        seed=seed,
        retry_errors=retry_errors,
        budgets=EpisodeBudgets(
            max_tokens_per_episode, max_seconds_per_episode, max_cost_per_episode, show_budget
        ),
        max_cost_usd=max_cost,
        progress=progress,
        engines=engines,
        ray=ray_option(ray),
    )
    run_dir = config.out_dir or out or Path(".")
    total = len(choose_tasks(env, tasks, limit)) * epochs
    argv = eval_argv(env, models, options)
    several = len(models) > 1
    dirs = list(model_dirs(models, run_dir).values()) if several else [run_dir]
    hook = atif_writer(atif, several) if atif is not None else None
    try:
        if several:
            results = run_interruptible(lambda: run_models(config, models, console=console, on_record=hook))
        else:
            results = [run_interruptible(lambda: run_eval(config, console=console, on_record=hook))]
    except Interrupted as stop:
        raise interrupted(stop.signame, dirs, [total] * len(dirs), argv, run_dir) from None
    _finish(results, run_dir, several, eval_argv(env, models, options | {"max_cost": None}))


def atif_writer(folder: Path, several: bool) -> Any:
    """``--atif``: write each record as an ATIF file once the runner has it on disk."""
    from intercode_agents.integrations.atif.export import session_of, write_atif

    def write(run_dir: Path, record: Any) -> None:
        write_atif(record, folder / run_dir.name if several else folder, session_id=session_of(run_dir))

    return write


def _finish(results: list[Any], run_dir: Path, several: bool, argv: list[str]) -> None:
    """Print the summaries, write the report, and say where it is and how to open it."""
    from intercode_agents.report import write_report
    from intercode_agents.report.terminal import summary_table

    for result in results:
        if several:
            console.print(f"[bold]{result.out_dir.name}[/]", highlight=False)
        console.print(summary_table(result.summary, wall_s=result.wall_s, new=result.new_episodes))
        print_engines(result.engines, result.engine_retries, result.nodes)
        console.print(f"records: {result.out_dir / 'trajectories.jsonl'}", highlight=False)
        if result.stopped:
            err_console.print(f"[yellow]stopped:[/] {result.stopped}", highlight=False)
    html, _ = write_report([r.out_dir for r in results], run_dir / "report.html" if several else None)
    if any(r.stopped for r in results):
        err_console.print("Resume with a higher cap:", highlight=False)
        hint = f"  {resume_command(argv, run_dir)} --max-cost USD"
        err_console.print(hint, highlight=False, soft_wrap=True)
    console.print(f"report:  {html}", highlight=False)
    console.print(f"view it: intercode-agents view {run_dir}", highlight=False)

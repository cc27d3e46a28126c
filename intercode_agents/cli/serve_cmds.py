"""``serve``: our envs behind other frameworks' servers. ``serve openenv`` is OpenEnv's."""

from __future__ import annotations

import ipaddress
import sys
from pathlib import Path
from typing import Annotated

import typer

from intercode_agents.cli.app import app, friendly
from intercode_agents.cli.run_cmds import EnginesOpt
from intercode_agents.errors import ConfigError

serve_app = typer.Typer(help="Serve the envs to other frameworks (OpenEnv).", no_args_is_help=True)
app.add_typer(serve_app, name="serve")

INSTALL_HINT = "pip install 'intercode-agents[openenv]'"


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@serve_app.command("openenv")
@friendly
def openenv_cmd(
    env: Annotated[
        str, typer.Option("--env", help="The env: a name (bash, sql, ...) or an env YAML's path.")
    ],
    host: Annotated[str, typer.Option(help="The address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="The port.")] = 8000,
    max_sessions: Annotated[int, typer.Option(help="WebSocket sessions (episodes) at once.")] = 32,
    idle_timeout: Annotated[
        float, typer.Option(help="Seconds a session may stay silent before it is ended (0: never).")
    ] = 600.0,
    turns: Annotated[
        int | None,
        typer.Option(help="Actions per episode; the last one is followed by a submit (default: no limit)."),
    ] = None,
    tasks: Annotated[
        str | None,
        typer.Option(help="The tasks clients may play, as a selector (default: every task of the env)."),
    ] = None,
    reward: Annotated[str, typer.Option(help="intercode (the paper's maths) or strict.")] = "intercode",
    action_timeout: Annotated[
        float | None, typer.Option(help="Seconds per action (the env's default).")
    ] = None,
    observation_limit: Annotated[
        int | None, typer.Option(help="Characters of an observation a client sees (head + tail).")
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Append each ended episode's record to DIR/trajectories.jsonl.")
    ] = None,
    allow_remote: Annotated[
        bool,
        typer.Option(
            help="Allow an address other than loopback. OpenEnv's client sends no credentials: anyone who "
            "reaches the port can run code in the sandboxes."
        ),
    ] = False,
    engines: EnginesOpt = None,
) -> None:
    """Serve an env with OpenEnv's server: OpenEnv's clients (TRL, Unsloth, SkyRL, torchforge,
    verifiers) reset it to a task and step it over the WebSocket /ws.

    reset(task_id=...) or reset(selector=..., seed=...) starts an episode; step({"action": "ls"}) runs
    a command and step({"action": "submit"}) scores it (reward and done). Only the reward parts an
    agent may see reach a client. Each session's sandbox is removed when the client closes,
    disconnects, is killed or stays silent past --idle-timeout.

    Examples:
      intercode-agents serve openenv --env bash
      intercode-agents serve openenv --env sql --port 8001 --turns 10 --tasks mini --out runs/openenv
      intercode-agents serve openenv --env examples/custom_env/jq.yaml
    """
    for name, value in (("max-sessions", max_sessions), ("port", port), ("turns", turns or 1)):
        if value < 1:
            raise ConfigError(f"--{name} must be at least 1, got {value}")
    if idle_timeout < 0:
        raise ConfigError(f"--idle-timeout is a number of seconds (0: never), got {idle_timeout:g}")
    if not _loopback(host) and not allow_remote:
        raise ConfigError(
            f"binding {host!r} lets other machines run code in the sandboxes, and OpenEnv's client sends no "
            "credentials: bind 127.0.0.1, or say --allow-remote on a network you trust"
        )
    from intercode_agents.reward import check_mode
    from intercode_agents.runner.rollout import RolloutOptions
    from intercode_agents.sandbox import resolve_engines
    from intercode_agents.tools.observation import DEFAULT_OBSERVATION_LIMIT, MIN_OBSERVATION_LIMIT

    check_mode(reward)
    limit = observation_limit or DEFAULT_OBSERVATION_LIMIT
    if limit < MIN_OBSERVATION_LIMIT:
        raise ConfigError(f"--observation-limit must be at least {MIN_OBSERVATION_LIMIT}, got {limit}")
    env_options: dict[str, object] = {"reward": reward}
    if action_timeout is not None:
        env_options["action_timeout"] = action_timeout
    engine_set = resolve_engines(engines)
    if engines:
        env_options["backend"] = engine_set
    rollout = RolloutOptions(
        max_turns=turns, observation_limit=limit, tasks=tasks, env_options=env_options, client="openenv"
    )
    try:
        from intercode_agents.integrations.openenv.server import ServerSettings, serve
    except ImportError as exc:
        raise ConfigError(f"serving OpenEnv needs openenv-core ({exc}): {INSTALL_HINT}") from exc
    settings = ServerSettings(
        env=env,
        rollout=rollout,
        record_dir=out,
        max_sessions=max_sessions,
        idle_timeout_s=idle_timeout or None,
    )
    if tasks is not None:
        from intercode_agents.datasets import select_tasks

        if not select_tasks(env, tasks):
            raise ConfigError(f"--tasks {tasks!r} names no task of the {settings.spec.name} env")
    import asyncio

    from intercode_agents.runner.preflight import image_ids

    asyncio.run(image_ids([], engines=engine_set))  # every engine answers (the runner's preflight)
    print(f"serving {settings.spec.name} over OpenEnv at ws://{host}:{port}/ws", file=sys.stderr, flush=True)
    serve(settings, host=host, port=port)

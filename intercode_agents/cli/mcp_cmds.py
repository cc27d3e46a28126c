"""``mcp``: serve our episodes to any MCP client (stdio or streamable HTTP)."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from intercode_agents.cli.app import app, friendly
from intercode_agents.cli.run_cmds import EnginesOpt
from intercode_agents.errors import ConfigError

if TYPE_CHECKING:
    from intercode_agents.runner.episode_registry import ServerOptions

TOKEN_ENV = "INTERCODE_AGENTS_MCP_TOKEN"


@app.command("mcp")
@friendly
def mcp_cmd(
    transport: Annotated[
        str, typer.Option(help="stdio (for a client that starts the server) or http.")
    ] = "stdio",
    host: Annotated[
        str, typer.Option(help="HTTP: the address to bind (another than loopback needs a token).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="HTTP: the port.")] = 8765,
    path: Annotated[str, typer.Option(help="HTTP: the endpoint's path.")] = "/mcp",
    token: Annotated[
        str | None,
        typer.Option(help=f"HTTP: require this bearer token (or set ${TOKEN_ENV}).", show_default=False),
    ] = None,
    guards: Annotated[
        bool, typer.Option(help="SQL and Bash guards with automatic rollback in front of every episode.")
    ] = False,
    rollback: Annotated[
        bool, typer.Option(help="Checkpoint each episode's start; offer the rollback tool.")
    ] = True,
    critic_model: Annotated[
        str | None, typer.Option(help="A model (local, provider:name) that reviews every submit first.")
    ] = None,
    max_episodes: Annotated[int, typer.Option(help="Episodes that may run at once.")] = 8,
    ttl: Annotated[float, typer.Option(help="Seconds an idle episode lives before it is ended.")] = 900.0,
    turns: Annotated[
        int | None,
        typer.Option(help="Turns per episode: act, rollback and evaluate use one each (default: no limit)."),
    ] = None,
    evaluate: Annotated[
        bool,
        typer.Option(
            help="Offer the evaluate tool: a score before the submit, which uses a turn and is recorded "
            "as a step. Off by default: a free score is feedback from the gold."
        ),
    ] = False,
    action_timeout: Annotated[
        float | None, typer.Option(help="Seconds per action (the env's default).")
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Append each ended episode's record to DIR/trajectories.jsonl.")
    ] = None,
    env: Annotated[
        list[Path] | None,
        typer.Option(
            "--env",
            help="Also serve the env this YAML defines, by its name (repeatable). Clients name envs; "
            "they never give paths.",
            show_default=False,
        ),
    ] = None,
    engines: EnginesOpt = None,
) -> None:
    """Serve the envs as MCP tools: list_tasks, start_episode, act, submit, rollback, end_episode
    (and evaluate, with --evaluate).

    Every call carries the episode_id that start_episode returned. A client sees a reward's parts only
    where they describe its own state against the gold; the records (--out) keep them all. With
    --engines, each episode's sandboxes go to the engine with the most free slots. When the server
    stops (a signal, or a stdio client that goes away) every episode ends and its containers are
    removed, on every engine.

    Examples:
      intercode-agents mcp                                   # stdio, for a client that starts it
      intercode-agents mcp --guards --critic-model local     # with the safeguards and a critic
      intercode-agents mcp --turns 10 --evaluate --out runs/mcp   # scores before the submit, recorded
      INTERCODE_AGENTS_MCP_TOKEN=s3cret intercode-agents mcp --transport http --port 8765
      intercode-agents mcp --env examples/custom_env/jq.yaml   # also serves the user's env "jq"
      intercode-agents mcp --engines unix:///var/run/docker.sock,tcp://127.0.0.1:2376
    """
    from intercode_agents.runner.episode_registry import ServerOptions
    from intercode_agents.sandbox import install_signal_handlers, resolve_engines

    if transport not in ("stdio", "http"):
        raise ConfigError(f"unknown transport {transport!r}; choose stdio or http")
    for name, value in (("max-episodes", max_episodes), ("port", port), ("turns", turns or 1)):
        if value < 1:
            raise ConfigError(f"--{name} must be at least 1, got {value}")
    if ttl <= 0:
        raise ConfigError(f"--ttl must be a positive number of seconds, got {ttl:g}")
    from intercode_agents.spec import load_spec

    served = [load_spec(path).name for path in env or []]  # a bad YAML stops the server here
    if served:
        print(f"serving the user envs: {', '.join(served)}", file=sys.stderr)
    critic = None
    if critic_model:
        from intercode_agents.models import resolve_model

        critic = resolve_model(critic_model)
    options = ServerOptions(
        max_episodes=max_episodes,
        ttl_s=ttl,
        max_turns=turns,
        evaluate=evaluate,
        action_timeout=action_timeout,
        guards=guards,
        rollback=rollback,
        critic_model=critic,
        record_dir=out,
        engines=resolve_engines(engines),
    )
    install_signal_handlers()
    asyncio.run(_serve(options, transport, host, port, path, token or os.environ.get(TOKEN_ENV) or None))


async def _serve(
    options: ServerOptions, transport: str, host: str, port: int, path: str, token: str | None
) -> None:
    from intercode_agents.mcp_server.server import check_bind, serve_http, serve_stdio
    from intercode_agents.runner.preflight import image_ids

    await image_ids([], engines=options.engines)  # every engine answers (the runner's preflight)
    if transport == "stdio":
        await serve_stdio(options)
    else:
        check_bind(host, token)
        await serve_http(options, host=host, port=port, token=token, path=path)

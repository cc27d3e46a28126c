"""``intercode-agents mcp``: our episodes as tools of a Model Context Protocol server.

Built on the official SDK (``mcp`` 2.x, :class:`mcp.server.MCPServer`), over stdio (the default) or
streamable HTTP. The tools, whose names clients can rely on:

- ``list_tasks(env, selector?, limit?, offset?)``: task ids, splits, groups and questions (never a
  gold answer); the selector is bounded and its filters match public fields only
  (:mod:`intercode_agents.datasets.select`), and it is evaluated in a worker thread, so a large one
  never holds the other clients' calls;
- ``start_episode(env, task_id?, reward_mode?)`` → ``{episode_id, question, env, task_id, limits}``;
  without a task id, a live sandbox of the env (actions run, nothing is scored);
- ``act(episode_id, action)`` → the observation (cut head + tail to the server's limit), exit code
  and flags, what the guards did, and the turns left;
- ``evaluate(episode_id, answer?)``, only when the server runs with ``--evaluate``: the score of the
  current state; the episode goes on, the call uses a turn and is recorded (:mod:`.episodes`);
- ``submit(episode_id, answer?)`` → the reward and the parts of it an agent may see (or the
  critic's veto, when the server has one);
- ``rollback(episode_id, to?)``: the task files back to the last checkpoint (``to="start"``: the
  episode's start), verified by digest;
- ``end_episode(episode_id)``: the episode's record, and its containers are removed.

Every call carries its episode id; nothing depends on a transport session (:mod:`.episodes`). A bad
id or argument is an MCP tool error with the reason. ``--guards`` puts the safeguards of
:mod:`intercode_agents.guards` in front of every episode and ``--critic-model`` reviews submits.

HTTP binds 127.0.0.1 unless told otherwise; another address needs a bearer token (``--token`` or
``$INTERCODE_AGENTS_MCP_TOKEN``), which every request must then carry as ``Authorization: Bearer``.
When the server stops (a signal, the end of a stdio client's input) every episode ends and its
containers are removed.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
from typing import Any

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from intercode_agents import __version__
from intercode_agents.datasets import select_tasks
from intercode_agents.errors import ConfigError, IntercodeError
from intercode_agents.runner.episode_registry import EpisodeError, EpisodeRegistry, ServerOptions, served_env
from intercode_agents.sandbox import RUN_ID

QUESTION_CHARS = 600  # of each question in list_tasks
MAX_LIST = 500

INSTRUCTIONS = (
    "Interactive coding tasks (Bash, SQL, Python, CTF) in isolated sandboxes. list_tasks shows the tasks; "
    "start_episode returns an episode_id that every other call takes; act runs one action; submit ends the "
    "task and returns the reward; end_episode frees the sandbox."
)
EVALUATE_NOTE = " evaluate scores the current state before the submit; each call uses a turn."


async def _guarded(call: Any) -> Any:
    try:
        return await call
    except EpisodeError as exc:
        raise ToolError(str(exc)) from exc
    except IntercodeError as exc:
        raise ToolError(f"{type(exc).__name__}: {exc}") from exc


def build_server(registry: EpisodeRegistry) -> MCPServer:
    """The MCP server over ``registry``'s episodes."""
    options = registry.options
    instructions = INSTRUCTIONS + (EVALUATE_NOTE if options.evaluate else "")
    server: MCPServer = MCPServer(
        "intercode-agents", instructions=instructions, version=__version__, log_level="WARNING"
    )
    listing = asyncio.Semaphore(1)  # one selector at a time in a worker thread: many never crowd the loop

    @server.tool()
    async def list_tasks(
        env: str, selector: str | None = None, limit: int = 50, offset: int = 0
    ) -> dict[str, Any]:
        """List tasks of an env (bash, sql, python, ctf, or one the server was started with).
        `selector` takes split names (test, fs1, spider, mbpp, mini, ...), task ids, id globs
        (bash/fs1/*) and filters on public fields (hardness=easy, db=..., tag=..., entry_point=...)."""
        if not 1 <= limit <= MAX_LIST or offset < 0:
            raise ToolError(f"limit is 1..{MAX_LIST} and offset 0 or more")
        try:
            async with listing:
                tasks = await asyncio.to_thread(select_tasks, served_env(env), selector)
        except IntercodeError as exc:
            raise ToolError(str(exc)) from exc
        page = tasks[offset : offset + limit]
        return {
            "env": env,
            "total": len(tasks),
            "offset": offset,
            "tasks": [
                {"id": t.id, "split": t.split, "group": dict(t.group), "question": t.query[:QUESTION_CHARS]}
                for t in page
            ],
        }

    @server.tool()
    async def start_episode(
        env: str, task_id: str | None = None, reward_mode: str | None = None
    ) -> dict[str, Any]:
        """Start an episode of `task_id` in a fresh sandbox (no task_id: a live sandbox of the env).
        `reward_mode` is intercode (the paper's maths, default) or strict."""
        episode, question = await _guarded(registry.start(env, task_id, reward_mode))
        return {
            "episode_id": episode.id,
            "env": episode.env.name,
            "task_id": episode.trajectory.task_id or None,
            "question": question,
            "limits": {
                "max_turns": options.max_turns,
                "evaluate": options.evaluate,
                "action_timeout_s": episode.env.action_timeout,
                "observation_chars": options.observation_limit,
                "idle_ttl_s": options.ttl_s,
                "max_episodes": options.max_episodes,
            },
            "submit_takes_answer": episode.env.submit_takes_argument,
            "sandbox_run": RUN_ID,  # the run label of this server's containers
            "guards": episode.guard.policy.guard_settings(),
        }

    @server.tool()
    async def act(episode_id: str, action: str) -> dict[str, Any]:
        """Run one action (a Bash command, a SQL query, Python code) in the episode's sandbox."""
        return await _guarded(registry.act(episode_id, action))

    if options.evaluate:  # offered only when the operator switched it on (see episodes.py)

        @server.tool()
        async def evaluate(episode_id: str, answer: str | None = None) -> dict[str, Any]:
            """Score the current state as if submitted now (Python, CTF: score `answer`); the episode
            goes on. Uses a turn, like act."""
            return await _guarded(registry.evaluate(episode_id, answer))

    @server.tool()
    async def submit(episode_id: str, answer: str | None = None) -> dict[str, Any]:
        """Finish the task. Bash and SQL submit the last output; Python takes the function name and CTF
        the flag as `answer`. Returns the reward (0..1) and its parts."""
        return await _guarded(registry.submit(episode_id, answer))

    @server.tool()
    async def rollback(episode_id: str, to: str = "last") -> dict[str, Any]:
        """Restore the task files to the last checkpoint (to="start": as at the start), verified by digest."""
        return await _guarded(registry.rollback(episode_id, to))

    @server.tool()
    async def end_episode(episode_id: str) -> dict[str, Any]:
        """End the episode and remove its sandbox; returns its record's summary."""
        trajectory = await _guarded(registry.end(episode_id))
        return {
            "ended": True,
            "task_id": trajectory.task_id or None,
            "outcome": trajectory.outcome,
            "reward": trajectory.reward,
            "steps": len(trajectory.steps),
            "guards": trajectory.guards.get("counts", {}),
        }

    return server


async def serve_stdio(options: ServerOptions) -> None:
    """Serve over stdin/stdout until the client closes its end; then end every episode."""
    async with EpisodeRegistry(options) as registry:
        await build_server(registry).run_stdio_async()


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class BearerAuth:
    """ASGI wrapper: every HTTP request must carry ``Authorization: Bearer <token>``."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        kind = scope.get("type")
        if kind != "lifespan":  # every connection (http, websocket) shows the token
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                if kind != "http":
                    await send({"type": "websocket.close", "code": 1008})
                    return
                body = json.dumps({"error": "a valid bearer token is required"}).encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def check_bind(host: str, token: str | None) -> None:
    """A non-loopback address needs a token; a wildcard address is never the default."""
    if not is_loopback(host) and not token:
        raise ConfigError(
            f"binding {host!r} lets other machines reach the sandboxes: give a bearer token "
            "(--token or $INTERCODE_AGENTS_MCP_TOKEN), or bind 127.0.0.1"
        )


async def serve_http(
    options: ServerOptions,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
    path: str = "/mcp",
) -> None:
    """Serve streamable HTTP on ``host:port`` (``path``) until stopped; then end every episode."""
    import uvicorn

    check_bind(host, token)
    async with EpisodeRegistry(options) as registry:
        app: Any = build_server(registry).streamable_http_app(
            streamable_http_path=path, stateless_http=True, host=host
        )
        if token:
            app = BearerAuth(app, token)
        config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
        await uvicorn.Server(config).serve()

"""The SQL env: Spider (and WikiSQL, and the project's mini set) on a read-only MariaDB.

Every SQL env of the event loop shares one MariaDB container for the agents' statements and another
for the gold queries (:mod:`~intercode_agents.envs.sql.server`); the agent reaches a server only
through an in-container JSON-lines helper (a unix-socket client), never through a port. Each env
has its own helper with an account of its own (the read-only role, nothing else), created when the
env first needs it and dropped at close, so episodes of other envs are out of its sight and reach.
Every episode's statements run on a new connection, opened after every other thread of the account is
gone (by the request of its first statement).

An action first passes the isolation policy (:mod:`intercode_agents.envs.sql.isolation`), which
refuses what privileges cannot stop (locks, counters, status, locking reads, SET, PREPARE, ...);
then it runs under the helper's own deadline. Results come back as rows with column names, under a
row cap. Gold results come from the gold server (:mod:`~intercode_agents.envs.sql.gold`).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from intercode_agents.datasets import Task
from intercode_agents.datasets.sources import TaskSource
from intercode_agents.datasets.task import TaskDetails
from intercode_agents.envs.base import ActionResult, Env
from intercode_agents.envs.sql.gold import GOLD_HELPERS, SCORE_ROW_CAP, gold_outcome
from intercode_agents.envs.sql.guard import sql_refusal
from intercode_agents.envs.sql.isolation import isolation_refusal
from intercode_agents.envs.sql.reward import AGENT_PARTS, SqlOutcome, sql_reward
from intercode_agents.envs.sql.server import SqlClient, SqlServer, close_server, open_server
from intercode_agents.errors import DatasetError, IntercodeError
from intercode_agents.images import image_ref
from intercode_agents.reward import RewardResult

RESET_TIMEOUT_S = 30  # what opening an episode's session may add to its first statement's deadline


def render_rows(rows: list[list[Any]], limit: int) -> str:
    """Rows as the original showed them: a Python list of tuples."""
    shown = [tuple(r) for r in rows[:limit]]
    text = repr(shown)
    if len(rows) > limit:
        text += f"\n[... {len(rows) - limit} more rows not shown]"
    return text


class SqlEnv(Env):
    name = "sql"
    language = "sql"
    action_language = "sql"
    agent_parts = AGENT_PARTS
    guard_note = "A guard refuses every statement that does not only read (SELECT, SHOW, DESCRIBE, EXPLAIN)."

    @classmethod
    def guard_refusal(cls, action: str) -> str | None:
        return sql_refusal(action)

    @classmethod
    def task_details(
        cls, record: dict[str, Any], source: TaskSource, index: int, root: Path | None
    ) -> TaskDetails:
        """A SQL task names its database; Spider's carry their hardness (a metric group)."""
        if "db" not in record:
            raise DatasetError(f"task #{index} of split {source.env}/{source.split} has no 'db' field")
        db = record["db"]
        group = {"db": db} | ({"hardness": record["hardness"]} if "hardness" in record else {})
        meta: dict[str, Any] = {"db": db}
        if "db_tables" in record:
            meta["db_tables"] = record["db_tables"]
        if "note" in source.options:
            meta["note"] = str(source.options["note"])
        return TaskDetails(group=group, meta=meta, public={"db": str(db)})

    def __init__(self, *, image: str = "sql", max_rows_shown: int = 100, **kw: Any) -> None:
        super().__init__(**kw)
        self.image = image
        self.max_rows_shown = max_rows_shown
        self.server: SqlServer | None = None
        self.gold_server: SqlServer | None = None
        self.client: SqlClient | None = None
        self.db: str | None = None  # the episode's current database, as the helper last reported it
        self._last: SqlOutcome = SqlOutcome(rows=None, error="no query was run")
        self._gold_run: tuple[Task, asyncio.Task[SqlOutcome]] | None = None  # started at reset
        self._reset_pending = False  # the episode's first statement opens its session

    @property
    def last_rows(self) -> list[tuple[Any, ...]] | None:
        """The rows of the last query; None after an error or a statement without a result set."""
        return None if self._last.rows is None else [tuple(row) for row in self._last.rows]

    async def start(self) -> None:
        if self.server is not None:
            return
        ref = image_ref(self.image)
        # The two servers live on the first engine of the env's set: an episode is a connection to
        # them, not a container, so spreading it over engines would gain nothing.
        backend = self.engines.first
        agents, gold = await asyncio.gather(
            open_server(ref, "agents", backend), open_server(ref, "gold", backend), return_exceptions=True
        )
        opened = [s for s in (agents, gold) if isinstance(s, SqlServer)]
        failed = [e for e in (agents, gold) if isinstance(e, BaseException)]
        if failed:
            for server in opened:
                await close_server(server)
            raise failed[0]
        assert isinstance(agents, SqlServer) and isinstance(gold, SqlServer)
        self.server, self.gold_server = agents, gold
        # The env's own helper and the gold server's start with the env, not in its first episode.
        client, warmed = await asyncio.gather(
            agents.client(), gold.warm(GOLD_HELPERS), return_exceptions=True
        )
        if isinstance(client, SqlClient):
            self.client = client  # (closed with the env, whatever else failed)
        for outcome in (client, warmed):
            if isinstance(outcome, BaseException):
                raise outcome

    async def _client(self) -> SqlClient:
        if self.client is None:
            await self.start()
            assert self.server is not None
            self.client = await self.server.client()
        return self.client

    def validate_action(self, action: str) -> str | None:
        if problem := super().validate_action(action):
            return problem
        try:
            action.encode("utf-8")
        except UnicodeEncodeError as exc:
            return f"the action is not valid Unicode text (a lone surrogate at position {exc.start})"
        return None

    async def _prepare(self, task: Task) -> None:
        await self._client()
        # The episode's session (a new connection, the account's other threads gone, the task's
        # database) is opened by the helper before the episode's first statement, in its request.
        self.db = task.meta.get("db")
        self._reset_pending = True
        self._last = SqlOutcome(rows=None, error="no query was run")
        # The gold's answer is computed on its own server while the agent works (scoring needs it).
        await self._forget_gold_run()
        run = asyncio.ensure_future(self._run_gold(task))
        run.add_done_callback(lambda done: done.cancelled() or done.exception())  # read when scored
        self._gold_run = (task, run)

    async def _execute(self, action: str) -> ActionResult:
        if reason := isolation_refusal(action):
            self._last = SqlOutcome(rows=None, error=f"refused: {reason}")
            return ActionResult(f"Error: refused: {reason}", exit_code=1, errored=True)
        client = await self._client()  # tool mode: a live read-only server, no database selected
        reset, self._reset_pending = self._reset_pending, False  # (a helper that fails starts anew)
        request = {"op": "query", "sql": action, "timeout": self.action_timeout, "max_rows": SCORE_ROW_CAP}
        request |= {"db": self.db, "reset": reset}
        reply = await client.request(request, timeout=self.action_timeout + RESET_TIMEOUT_S * reset)
        if reply.get("reset_failed"):  # the harness's fault, not the agent's: the episode ends in error
            raise IntercodeError(f"cannot open a session on database {self.db!r}: {reply.get('error')}")
        if "db" in reply:  # a restarted helper's reply has none: the next request restores it
            self.db = reply["db"]
        if not reply.get("ok"):
            error = str(reply.get("error") or "the query failed")
            self._last = SqlOutcome(rows=None, error=error)
            timed_out = bool(reply.get("timed_out"))
            note = f"\n[timed out after {self.action_timeout:g}s]" if timed_out else ""
            return ActionResult(f"Error: {error}{note}", exit_code=1, errored=True, timed_out=timed_out)
        rows = reply.get("rows")
        columns = reply.get("columns") or []
        if rows is None or not columns:  # a statement without a result set (USE, ...)
            self._last = SqlOutcome(rows=None)
            return ActionResult(f"OK ({reply.get('rowcount', 0)} rows affected)", exit_code=0)
        self._last = SqlOutcome(rows=[tuple(r) for r in rows])
        return ActionResult(
            render_rows(rows, self.max_rows_shown),
            exit_code=0,
            output_truncated=bool(reply.get("truncated")),
        )

    async def _run_gold(self, task: Task) -> SqlOutcome:
        await self.start()
        assert self.gold_server is not None
        return await gold_outcome(
            self.gold_server, str(task.meta.get("db") or ""), task.gold, self.action_timeout
        )

    async def _gold(self, task: Task) -> SqlOutcome:
        if self._gold_run is not None and self._gold_run[0] is task:
            return await asyncio.shield(self._gold_run[1])
        return await self._run_gold(task)

    async def _forget_gold_run(self) -> None:
        """Drop the gold run of the previous episode (cancelled if it is still going)."""
        run, self._gold_run = self._gold_run, None
        if run is not None and not run[1].done():
            run[1].cancel()
            await asyncio.gather(run[1], return_exceptions=True)

    async def _score(self, submission: str) -> RewardResult:
        task = self._require_task()
        return sql_reward(self._last, await self._gold(task), task.gold, self.reward_mode)

    async def close(self) -> None:
        await self._forget_gold_run()
        client, self.client = self.client, None
        servers = [s for s in (self.server, self.gold_server) if s is not None]
        self.server = self.gold_server = None
        if client is not None:
            await client.close()
        for server in servers:
            await close_server(server)

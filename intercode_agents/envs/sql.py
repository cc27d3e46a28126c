"""The SQL env: Spider (and WikiSQL, and the project's mini set) on a read-only MariaDB.

One MariaDB container serves every SQL env of the event loop; the agent reaches it only through the
in-container JSON-lines helper (a unix-socket client), never through a port. Each env keeps one helper
for the agent and one for the gold; every episode (and every gold query) starts on a new connection.
The account is read-only, so a new connection is a pristine state. Results come back as rows with
column names, under a row cap and a per-query timeout. Gold results are cached per process.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from intercode_agents.datasets import Task
from intercode_agents.datasets.sources import TaskSource
from intercode_agents.envs.base import ActionResult, Env, TaskDetails
from intercode_agents.envs.pools import close_shared, open_shared
from intercode_agents.errors import DatasetError, SessionDied
from intercode_agents.images import image_ref
from intercode_agents.rewards import RewardResult, SqlOutcome, sql_reward
from intercode_agents.sandbox import JsonSession, Sandbox

HELPER = ["python3", "/opt/intercode/sqlhelper.py"]
SCORE_ROW_CAP = 100_000  # rows kept for scoring; the observation shows fewer
_GOLD_CACHE: dict[tuple[str, str, str], SqlOutcome] = {}  # (server image id, database, gold) -> result


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
        return TaskDetails(group=group, meta=meta)

    def __init__(self, *, image: str = "sql", max_rows_shown: int = 100, **kw: Any) -> None:
        super().__init__(**kw)
        self.image = image
        self.max_rows_shown = max_rows_shown
        self.server: Sandbox | None = None
        self.session: JsonSession | None = None
        self.db: str | None = None
        self._last: SqlOutcome = SqlOutcome(rows=None, error="no query was run")
        self._gold_session: JsonSession | None = None

    async def start(self) -> None:
        if self.server is None:
            self.server = await open_shared(image_ref(self.image))

    async def _helper(self) -> JsonSession:
        await self.start()
        assert self.server is not None
        return await self.server.json_session(HELPER, ready_timeout=90)

    async def _fresh_connection(self, session: JsonSession, db: str | None) -> None:
        reply = await session.request({"op": "reset", "db": db}, timeout=30)
        if not reply.get("ok"):
            raise SessionDied(f"cannot open a session on database {db!r}: {reply.get('error')}")

    async def _prepare(self, task: Task) -> None:
        if self.session is None:
            self.session = await self._helper()
        self.db = task.meta.get("db")
        await self._fresh_connection(self.session, self.db)
        self._last = SqlOutcome(rows=None, error="no query was run")

    async def query(self, session: JsonSession, sql: str, *, max_rows: int) -> dict[str, Any]:
        return await session.request(
            {"op": "query", "sql": sql, "timeout": self.action_timeout, "max_rows": max_rows},
            timeout=self.action_timeout,
        )

    async def _execute(self, action: str) -> ActionResult:
        if self.session is None:  # tool mode: a live read-only server, no database selected
            self.session = await self._helper()
        reply = await self.query(self.session, action, max_rows=SCORE_ROW_CAP)
        if not reply.get("ok"):
            error = str(reply.get("error") or "the query failed")
            self._last = SqlOutcome(rows=None, error=error)
            note = f"\n[timed out after {self.action_timeout:g}s]" if reply.get("timed_out") else ""
            return ActionResult(
                f"Error: {error}{note}", exit_code=1, errored=True, timed_out=bool(reply.get("timed_out"))
            )
        rows = reply.get("rows")
        columns = reply.get("columns") or []
        if rows is None or not columns:  # a statement without a result set (USE, SET, ...)
            self._last = SqlOutcome(rows=None)
            return ActionResult(f"OK ({reply.get('rowcount', 0)} rows affected)", exit_code=0)
        self._last = SqlOutcome(rows=[tuple(r) for r in rows])
        return ActionResult(
            render_rows(rows, self.max_rows_shown),
            exit_code=0,
            output_truncated=bool(reply.get("truncated")),
        )

    async def _gold(self, task: Task) -> SqlOutcome:
        assert self.server is not None
        db = str(task.meta.get("db") or "")
        key = (self.server.image_id or self.image, db, task.gold)
        if key not in _GOLD_CACHE:
            if self._gold_session is None:
                self._gold_session = await self._helper()
            await self._fresh_connection(self._gold_session, db or None)
            reply = await self.query(self._gold_session, task.gold, max_rows=SCORE_ROW_CAP)
            if reply.get("ok"):
                rows = reply.get("rows")
                _GOLD_CACHE[key] = SqlOutcome(rows=[tuple(r) for r in rows] if rows is not None else None)
            else:
                _GOLD_CACHE[key] = SqlOutcome(rows=None, error=str(reply.get("error")))
        return _GOLD_CACHE[key]

    async def _score(self, submission: str) -> RewardResult:
        task = self._require_task()
        return sql_reward(self._last, await self._gold(task), task.gold, self.reward_mode)

    async def close(self) -> None:
        server, self.server = self.server, None
        sessions = [s for s in (self.session, self._gold_session) if s is not None]
        self.session = self._gold_session = None
        if server is not None:
            for session in sessions:
                await server.forget(session)
            await close_shared(server)

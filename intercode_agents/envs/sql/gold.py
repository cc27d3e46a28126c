"""Gold queries of the SQL env: run on the gold server only, in a fresh session, cached per process.

The gold server is a MariaDB of the same image that no agent's statement ever reaches, so a gold
result is the pristine database's answer: no agent can see the gold's statement, kill it, lock
against it or load its server. A few helpers of its own (each with its own account) serve every env
of the event loop; each gold query starts in a new connection's session state (the server resets the
helper's connection: COM_RESET_CONNECTION, which forgets variables, settings, temporary tables and
locks without a new login) with the task's database selected.

What is cached (per process, keyed by the gold server's image ID, the database and the gold text) is
only what the data decide: the gold's rows, an error the server reports for the query itself (a
syntax error, an unknown column) and a gold past its deadline, which is never run again in this
process. A failure of the machinery (the helper restarted, the connection was lost) is tried once
more on a new connection and, if it fails again, the gold counts as unable to run for this episode
only: the reward marks the task corrupt, and the next episode tries again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from intercode_agents.envs.sql.reward import SqlOutcome
from intercode_agents.envs.sql.server import SqlServer

GOLD_HELPERS = 4  # gold helpers per gold server, shared by every env of the event loop
SCORE_ROW_CAP = 100_000  # rows kept for scoring; the observation shows fewer
# Errors that come from the machinery or the moment, not from the gold query: never cached.
TRANSIENT_ERRNOS = frozenset(
    {
        1040,  # too many connections
        1203,  # the account's connection limit
        1205,  # lock wait timeout
        1213,  # deadlock
        1317,  # query execution was interrupted
        1927,  # connection was killed
        2002,  # cannot connect
        2006,  # server has gone away
        2013,  # lost connection during the query
    }
)

_GOLD_CACHE: dict[tuple[str, str, str], SqlOutcome] = {}


@dataclass(frozen=True)
class GoldRun:
    outcome: SqlOutcome
    deterministic: bool  # the data decide it: cache it


def classify(reply: dict[str, Any], timeout: float) -> GoldRun:
    """What one gold reply means: rows, a deterministic failure, or a transient one."""
    if reply.get("ok"):
        rows = reply.get("rows")
        columns = reply.get("columns")
        if rows is None or not columns:  # a statement without a result set
            return GoldRun(SqlOutcome(rows=None), True)
        return GoldRun(SqlOutcome(rows=[tuple(r) for r in rows]), True)
    error = str(reply.get("error") or "the gold query failed")
    if reply.get("timed_out") and not reply.get("restarted"):
        return GoldRun(SqlOutcome(rows=None, error=f"the gold query timed out after {timeout:g} s"), True)
    errno = reply.get("errno")
    deterministic = isinstance(errno, int) and errno not in TRANSIENT_ERRNOS and not reply.get("stuck")
    return GoldRun(SqlOutcome(rows=None, error=error), deterministic)


async def gold_outcome(server: SqlServer, db: str, sql: str, timeout: float) -> SqlOutcome:
    """The gold query's result on the pristine gold server (see the module docstring)."""
    key = (server.image_id, db, sql)
    if key in _GOLD_CACHE:
        return _GOLD_CACHE[key]
    request: dict[str, Any] = {"op": "query", "sql": sql, "db": db or None, "fresh": True}
    request |= {"timeout": timeout, "max_rows": SCORE_ROW_CAP}
    run = GoldRun(SqlOutcome(rows=None, error="the gold query did not run"), False)
    for _ in range(2):
        async with server.borrow(GOLD_HELPERS) as client:
            run = classify(await client.request(request, timeout=timeout), timeout)
        if run.deterministic:
            _GOLD_CACHE[key] = run.outcome
            break
    return run.outcome


def clear_gold_cache() -> None:
    """Forget every cached gold result (benchmarks use it to run every gold again)."""
    _GOLD_CACHE.clear()

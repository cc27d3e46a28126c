"""A MariaDB session speaking JSON lines on stdin/stdout (stdlib + pymysql).

Connects as the read-only account ``agent`` over the unix socket. One helper process holds one
connection, so a fresh process starts from a pristine session.

Ops (every request may carry "id", echoed back):
  {"op": "use", "db"}                            -> {"ok", "db"}
  {"op": "reset", "db"?}                         -> a new connection (pristine session state), then "use"
  {"op": "query", "sql", "timeout", "max_rows"}  -> {"ok", "columns", "rows", "rowcount", "truncated",
                                                     "error", "errno", "timed_out"}
  {"op": "ping"} -> {"ok": true}
"""

from __future__ import annotations

import datetime
import decimal
import math
import os
import re
import sys
import time
from typing import Any

import pymysql
import pymysql.constants.CLIENT
import pymysql.cursors
from jsonl_protocol import Channel, Request, Response, get_positive_int, get_str, get_timeout, serve

SOCKET = os.environ.get("INTERCODE_SQL_SOCKET", "/run/mysqld/mysqld.sock")
USER = os.environ.get("INTERCODE_SQL_USER", "agent")
STARTUP_WAIT_S = float(os.environ.get("INTERCODE_SQL_WAIT_S", "30"))
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_MAX_ROWS = 1000

ER_STATEMENT_TIMEOUT = 1969  # "Query execution was interrupted (max_statement_time exceeded)"
# Privilege errors: table/column/database/routine access denied, "you need the X privilege".
READ_ONLY_ERRNOS = {1044, 1142, 1143, 1227, 1370, 1410}
USE_STATEMENT = re.compile(r"\buse\b", re.IGNORECASE)
USE_TARGET = re.compile(r"\s*use\s+(?:`([^`]+)`|([\w$]+))\s*(?:;|$)", re.IGNORECASE)
ER_DBACCESS_DENIED = 1044
ER_BAD_DB = 1049


def to_json_value(value: Any) -> Any:
    """A JSON-safe, deterministic rendering of one column value."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):  # a TIME column: render it as MariaDB prints it
        micros = (value.days * 86400 + value.seconds) * 1_000_000 + value.microseconds
        sign, micros = ("-", -micros) if micros < 0 else ("", micros)
        seconds, fraction = divmod(micros, 1_000_000)
        text = f"{sign}{seconds // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"
        return text + (f".{fraction:06d}" if fraction else "")
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, set | frozenset):
        return ",".join(sorted(map(str, value)))
    return str(value)


def connect() -> pymysql.connections.Connection:
    return pymysql.connect(
        unix_socket=SOCKET,
        user=USER,
        password="",
        charset="utf8mb4",
        autocommit=True,
        client_flag=pymysql.constants.CLIENT.MULTI_STATEMENTS,
        cursorclass=pymysql.cursors.SSCursor,
    )


def wait_for_server(deadline_s: float) -> pymysql.connections.Connection:
    """Connect, retrying while the server starts; raise the last error after ``deadline_s``."""
    give_up = time.monotonic() + deadline_s
    while True:
        try:
            return connect()
        except pymysql.err.MySQLError:
            if time.monotonic() >= give_up:
                raise
            time.sleep(0.2)


def error_text(exc: pymysql.err.MySQLError) -> tuple[int | None, str]:
    errno = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
    message = str(exc.args[1]) if len(exc.args) > 1 else str(exc)
    if errno in READ_ONLY_ERRNOS:
        message = f"the database is read-only for the agent: {message}"
    return errno, message


def database_exists(conn: pymysql.connections.Connection, name: str) -> bool:
    with conn.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = %s", (name,))
        return bool(cursor.fetchone()[0])


def unknown_database(conn: pymysql.connections.Connection, sql: str, errno: int | None) -> str | None:
    """The database a failed ``USE x`` named when it does not exist (the server only says "access denied")."""
    match = USE_TARGET.match(sql)
    if errno != ER_DBACCESS_DENIED or match is None:
        return None
    name = match.group(1) or match.group(2)
    return None if database_exists(conn, name) else name


class SqlSession:
    def __init__(self, conn: pymysql.connections.Connection) -> None:
        self.conn = conn
        self.db: str | None = None

    def _ensure_connected(self) -> None:
        """Reconnect after a lost connection (e.g. ``KILL CONNECTION_ID()``) and reselect the database."""
        try:
            self.conn.ping(reconnect=False)
            return
        except pymysql.err.MySQLError:
            pass
        self.conn = connect()
        if self.db is not None:
            self.conn.select_db(self.db)

    def op_use(self, req: Request) -> Response:
        db = get_str(req, "db")
        self._ensure_connected()
        try:
            self.conn.select_db(db)
        except pymysql.err.MySQLError as exc:
            errno, message = error_text(exc)
            if unknown_database(self.conn, f"USE `{db}`", errno):
                errno, message = ER_BAD_DB, f"Unknown database '{db}'"
            return {"ok": False, "error": message, "errno": errno}
        self.db = db
        return {"ok": True, "db": db}

    def op_reset(self, req: Request) -> Response:
        """Drop the connection and open a new one: variables, settings and the database start afresh."""
        try:
            self.conn.close()
        except pymysql.err.MySQLError:
            pass
        self.conn, self.db = connect(), None
        if req.get("db") is None:
            return {"ok": True, "db": None}
        return self.op_use(req)

    def op_query(self, req: Request) -> Response:
        sql = get_str(req, "sql").strip().rstrip(";").strip()
        timeout = get_timeout(req, DEFAULT_TIMEOUT_S)
        max_rows = get_positive_int(req, "max_rows", DEFAULT_MAX_ROWS)
        result: Response = {
            "ok": True,
            "columns": [],
            "rows": [],
            "rowcount": 0,
            "truncated": False,
            "error": None,
            "errno": None,
            "timed_out": False,
        }
        if not sql:
            return {**result, "ok": False, "error": "empty SQL statement"}
        self._ensure_connected()
        cursor = self.conn.cursor()
        try:
            cursor.execute(f"SET SESSION max_statement_time = {timeout:.3f}")
            cursor.execute(sql)
            self._read_result(cursor, max_rows, result)
            while cursor.nextset():  # several statements: the last one's result counts
                self._read_result(cursor, max_rows, result)
            if USE_STATEMENT.search(sql):
                cursor.execute("SELECT DATABASE()")
                self.db = cursor.fetchone()[0]
        except pymysql.err.MySQLError as exc:
            errno, message = error_text(exc)
            if name := unknown_database(self.conn, sql, errno):
                errno, message = ER_BAD_DB, f"Unknown database '{name}'"
            timed_out = errno == ER_STATEMENT_TIMEOUT
            if timed_out:
                message = f"timed out after {timeout:g} s ({message})"
            result.update(ok=False, columns=[], rows=[], rowcount=0, truncated=False)
            result.update(error=message, errno=errno, timed_out=timed_out)
        finally:
            try:
                cursor.close()
            except pymysql.err.MySQLError:
                pass
        return result

    @staticmethod
    def _read_result(cursor: pymysql.cursors.SSCursor, max_rows: int, result: Response) -> None:
        if cursor.description is None:  # a statement without a result set
            result.update(columns=[], rows=[], rowcount=max(cursor.rowcount, 0), truncated=False)
            return
        columns = [col[0] for col in cursor.description]
        rows = [[to_json_value(v) for v in row] for row in cursor.fetchmany(max_rows)]
        rowcount = len(rows)
        while cursor.fetchone() is not None:  # count, and drain, what is beyond the cap
            rowcount += 1
        result.update(columns=columns, rows=rows, rowcount=rowcount, truncated=rowcount > len(rows))


def main() -> int:
    channel = Channel()
    try:
        conn = wait_for_server(STARTUP_WAIT_S)
    except pymysql.err.MySQLError as exc:
        channel.send(
            {
                "ready": False,
                "ok": False,
                "error": f"MariaDB did not accept a connection for {USER!r} on {SOCKET} within "
                f"{STARTUP_WAIT_S:g} s: {exc}",
            }
        )
        return 1
    session = SqlSession(conn)
    handlers = {
        "use": session.op_use,
        "reset": session.op_reset,
        "query": session.op_query,
        "ping": lambda req: {"ok": True},
    }
    channel.send({"ready": True, "helper": "sqlhelper", "server": conn.get_server_info(), "user": USER})
    return serve(channel, handlers)


if __name__ == "__main__":
    sys.exit(main())

"""A MariaDB session speaking JSON lines on stdin/stdout (stdlib + pymysql).

Connects over the unix socket as ``$INTERCODE_SQL_USER`` (default: the read-only account ``agent``)
with ``$INTERCODE_SQL_PASSWORD``. One helper holds two connections of that account: the *main* one,
which runs the statements it is sent, and a *control* one, which never runs them: it stops the main
one's statement at its deadline and reads the account's threads from the process list (an account
without the PROCESS privilege sees only its own there, and may kill only its own).

Deadlines are the helper's, not a session variable's: when a statement's deadline passes (a SIGALRM
timer), the control connection kills the main connection (``KILL CONNECTION``), the helper waits
until the process list no longer shows it, and only then answers (``timed_out``); the next
statement runs on a new connection with the same database. With ``$INTERCODE_SQL_EXCLUSIVE=1`` the
helper owns its account: at start, and at every ``reset``, it kills every other thread of the
account (a statement left by a helper that was killed, say) and waits until they are gone.

Ops (every request may carry "id", echoed back):
  {"op": "use", "db"}                                -> {"ok", "db"}
  {"op": "reset", "db"?}                             -> a new main connection (pristine session state),
                                                        the account's other threads gone, then "use"
  {"op": "query", "sql", "timeout", "max_rows",      -> {"ok", "columns", "rows", "rowcount", "truncated",
   "db"?, "fresh"?, "reset"?}                            "error", "errno", "timed_out", "db", "stuck"?,
                                                         "reset_failed"?}
       "db": the database the statement expects (selected first when the session has another one, as
       after a restart); "fresh": true runs it with the session state of a new connection (the
       server resets the main connection's session: COM_RESET_CONNECTION; a new connection when
       that fails); "reset": true does a "reset" to
       "db" first (an episode's first statement: one request instead of two), and when that fails
       answers as "reset" would, with "reset_failed". "stuck": the helper could not confirm that the
       statement is gone from the server (its caller must clear the account).
  {"op": "ping"} -> {"ok": true}
"""

from __future__ import annotations

import datetime
import decimal
import math
import os
import re
import signal
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

import pymysql
import pymysql.constants.CLIENT
import pymysql.cursors
from jsonl_protocol import Channel, Request, Response, get_positive_int, get_str, get_timeout, serve

SOCKET = os.environ.get("INTERCODE_SQL_SOCKET", "/run/mysqld/mysqld.sock")
USER = os.environ.get("INTERCODE_SQL_USER", "agent")
PASSWORD = os.environ.get("INTERCODE_SQL_PASSWORD", "")
EXCLUSIVE = os.environ.get("INTERCODE_SQL_EXCLUSIVE") == "1"
STARTUP_WAIT_S = float(os.environ.get("INTERCODE_SQL_WAIT_S", "30"))
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_MAX_ROWS = 1000
GONE_WAIT_S = 10.0  # how long killed threads may take to leave the process list

COM_RESET_CONNECTION = 0x1F  # (MariaDB 10.2.4 on; pymysql 1.0 has no name for it)
ER_NO_SUCH_THREAD = 1094
LOST_CONNECTION = frozenset({1927, 2006, 2013})  # killed, gone away, lost during the query
# Privilege errors: table/column/database/routine access denied, "you need the X privilege".
READ_ONLY_ERRNOS = {1044, 1142, 1143, 1227, 1370, 1410}
USE_STATEMENT = re.compile(r"\buse\b", re.IGNORECASE)
USE_TARGET = re.compile(r"\s*use\s+(?:`([^`]+)`|([\w$]+))\s*(?:;|$)", re.IGNORECASE)
ER_DBACCESS_DENIED = 1044
ER_BAD_DB = 1049


T = TypeVar("T")


class HelperError(Exception):
    """The helper cannot keep its promise (a killed thread never left, say); the request fails."""


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


def connect(user: str = USER, password: str = PASSWORD) -> pymysql.connections.Connection:
    return pymysql.connect(
        unix_socket=SOCKET,
        user=user,
        password=password,
        charset="utf8mb4",
        autocommit=True,
        client_flag=pymysql.constants.CLIENT.MULTI_STATEMENTS,
        cursorclass=pymysql.cursors.SSCursor,
    )


def wait_for_server(deadline_s: float, user: str = USER, password: str = PASSWORD) -> pymysql.Connection:
    """Connect, retrying while the server starts; raise the last error after ``deadline_s``."""
    give_up = time.monotonic() + deadline_s
    while True:
        try:
            return connect(user, password)
        except pymysql.err.MySQLError:
            if time.monotonic() >= give_up:
                raise
            time.sleep(0.2)


def close_quietly(conn: pymysql.connections.Connection | None) -> None:
    if conn is None:
        return
    try:
        conn.close()
    except Exception:
        pass


def _fail(result: Response, message: str, errno: int | None) -> None:
    result.update(ok=False, columns=[], rows=[], rowcount=0, truncated=False, error=message, errno=errno)


def error_text(exc: pymysql.err.MySQLError) -> tuple[int | None, str]:
    errno = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
    message = str(exc.args[1]) if len(exc.args) > 1 else str(exc)
    if errno in READ_ONLY_ERRNOS:
        message = f"the database is read-only for the agent: {message}"
    return errno, message


def account_threads(conn: pymysql.connections.Connection, user: str) -> list[tuple[int, str]]:
    """(id, command) of every thread of ``user`` but ``conn``'s own, from the process list (an
    account without the PROCESS privilege sees only its own threads there)."""
    own = conn.thread_id()
    with conn.cursor() as cursor:
        cursor.execute("SHOW PROCESSLIST")  # Id, User, Host, db, Command, ...
        return [(int(row[0]), str(row[4])) for row in cursor.fetchall() if row[1] == user and row[0] != own]


def kill_threads(conn: pymysql.connections.Connection, user: str, keep: frozenset[int] = frozenset()) -> int:
    """Kill every thread of ``user`` except ``conn``'s own and ``keep``, and wait until the process
    list no longer shows them. Returns how many were killed; raises HelperError if they stay."""
    give_up = time.monotonic() + GONE_WAIT_S
    killed: set[int] = set()
    pause = 0.0005  # a closed connection's thread is usually gone within a millisecond
    while True:
        left = [tid for tid, _ in account_threads(conn, user) if tid not in keep]
        if not left:
            return len(killed)
        if time.monotonic() >= give_up:
            raise HelperError(f"threads {sorted(left)} of {user!r} outlived KILL by {GONE_WAIT_S:g} s")
        with conn.cursor() as cursor:
            for tid in left:
                if tid not in killed:
                    try:
                        cursor.execute(f"KILL CONNECTION {tid:d}")
                    except pymysql.err.MySQLError as exc:
                        if exc.args[0] != ER_NO_SUCH_THREAD:
                            raise
                    killed.add(tid)
        time.sleep(pause)
        pause = min(2 * pause, 0.02)


def wait_gone(conn: pymysql.connections.Connection, user: str, thread_id: int) -> None:
    """Wait until thread ``thread_id`` of ``user`` has left the process list (kill it again if needed)."""
    others = frozenset(tid for tid, _ in account_threads(conn, user) if tid != thread_id)
    kill_threads(conn, user, keep=others)


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


class Watchdog:
    """Kills the main connection from the control connection when a statement's deadline passes.

    ``arm`` before a statement, ``disarm`` after its last row; ``disarm`` says whether it fired. The
    deadline is a real-time interval timer (SIGALRM): the handler runs in the helper's only thread,
    between two steps of the blocked driver, so no thread is woken for a statement that ends in
    time. A statement that ends just as the timer fires is treated as timed out (its connection is
    replaced), never left with a pending kill.
    """

    def __init__(self, session: SqlSession) -> None:
        self._session = session
        self._target: int | None = None
        self._fired = False
        signal.signal(signal.SIGALRM, self._expired)

    def arm(self, thread_id: int, timeout: float) -> None:
        self._target, self._fired = thread_id, False
        signal.setitimer(signal.ITIMER_REAL, timeout)

    def disarm(self) -> bool:
        signal.setitimer(signal.ITIMER_REAL, 0)
        self._target = None
        return self._fired

    def _expired(self, signum: int, frame: object) -> None:
        if self._target is not None and not self._fired:
            self._fired = True
            self._session.kill_main(self._target)


class SqlSession:
    def __init__(self, conn: pymysql.connections.Connection) -> None:
        self.conn = conn
        self.db: str | None = None
        self.broken = False  # the main connection was lost: replace it before the next statement
        self._control: pymysql.connections.Connection | None = None
        self.watchdog = Watchdog(self)

    # -- the control connection --------------------------------------------------------------
    def control(self) -> pymysql.connections.Connection:
        """The control connection (opened on first use, and again after it failed)."""
        if self._control is None:
            self._control = connect()
        return self._control

    def _with_control(self, action: Callable[[pymysql.connections.Connection], T]) -> T:
        """Run ``action`` on the control connection, on a new one if the old one was lost. (The
        helper has one thread; the watchdog's handler uses it only while a statement runs, when
        nothing else does.)"""
        try:
            return action(self.control())
        except pymysql.err.OperationalError:
            close_quietly(self._control)
            self._control = None
            return action(self.control())

    def kill_main(self, thread_id: int) -> None:
        """Kill the main connection's thread (called by the watchdog)."""

        def kill(control: pymysql.connections.Connection) -> None:
            with control.cursor() as cursor:
                try:
                    cursor.execute(f"KILL CONNECTION {thread_id:d}")
                except pymysql.err.MySQLError as exc:
                    if exc.args[0] != ER_NO_SUCH_THREAD:  # gone already: fine
                        raise

        try:
            self._with_control(kill)
        except pymysql.err.MySQLError:
            pass  # the helper's check before it answers fails and says so

    def sweep(self) -> int:
        """Kill every thread of the account but the helper's two connections; wait until gone."""
        keep = frozenset({self.conn.thread_id()})
        return self._with_control(lambda control: kill_threads(control, USER, keep=keep))

    # -- the main connection -----------------------------------------------------------------
    def _new_main(self) -> None:
        """Replace the main connection; the old one's thread must be gone from the server first."""
        old = self.conn.thread_id()
        close_quietly(self.conn)
        self._with_control(lambda control: wait_gone(control, USER, old))
        self.conn, self.broken = connect(), False
        if self.db is not None:
            self.conn.select_db(self.db)

    def _renew(self) -> None:
        """The main connection's session as a new connection's: user and session variables,
        temporary tables, prepared statements, locks and the transaction are reset by the server
        (one round trip instead of a new connection and its login); no database is selected."""
        if not self.broken:
            try:
                self.conn._execute_command(COM_RESET_CONNECTION, b"")
                self.conn._read_ok_packet()
                self.conn.autocommit(True)  # (the server's default; no round trip when it is on)
                self.db = None
                return
            except pymysql.err.MySQLError:
                pass
        close_quietly(self.conn)
        self.conn, self.db, self.broken = connect(), None, False

    def _select(self, db: str) -> Response | None:
        """Select ``db``; an error response when that fails."""
        try:
            self.conn.select_db(db)
        except pymysql.err.MySQLError as exc:
            errno, message = error_text(exc)
            if unknown_database(self.conn, f"USE `{db}`", errno):
                errno, message = ER_BAD_DB, f"Unknown database '{db}'"
            return {"ok": False, "error": message, "errno": errno}
        self.db = db
        return None

    def op_use(self, req: Request) -> Response:
        db = get_str(req, "db")
        if self.broken:
            self._new_main()
        return self._select(db) or {"ok": True, "db": db}

    def op_reset(self, req: Request) -> Response:
        """A new main connection: variables, settings and the database start afresh; with an
        exclusive account, every other thread of it is gone first."""
        db = get_str(req, "db") if req.get("db") is not None else None
        close_quietly(self.conn)
        self.conn, self.db, self.broken = connect(), None, False
        killed = 0
        if EXCLUSIVE and self._others_after_use(db):
            killed = self.sweep()
        if db is None:
            return {"ok": True, "db": None, "killed": killed}
        if self.db != db and (failed := self._select(db)):
            return failed
        return {"ok": True, "db": self.db, "killed": killed}

    def _others_after_use(self, db: str | None) -> bool:
        """Select ``db`` (when it exists) and tell whether the account has threads other than the
        helper's two, in one round trip."""
        own = {self.conn.thread_id()} | ({self._control.thread_id()} if self._control else set())
        sql = "SHOW PROCESSLIST" if db is None else f"USE `{db.replace('`', '``')}`; SHOW PROCESSLIST"
        try:
            with self.conn.cursor() as cursor:
                cursor.execute(sql)
                if db is not None:
                    cursor.nextset()
                    self.db = db
                rows = cursor.fetchall()
        except pymysql.err.MySQLError:  # the USE failed: op_reset reports why
            rows = [(tid, USER) for tid, _ in account_threads(self.conn, USER)]
        return any(row[1] == USER and row[0] not in own for row in rows)

    def op_query(self, req: Request) -> Response:
        sql = get_str(req, "sql").strip().rstrip(";").strip()
        timeout = get_timeout(req, DEFAULT_TIMEOUT_S)
        max_rows = get_positive_int(req, "max_rows", DEFAULT_MAX_ROWS)
        want_db = req.get("db")
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
        if req.get("reset"):  # an episode's first statement: its reset first, in the same request
            reset = self.op_reset({"db": want_db})
            if not reset.get("ok"):
                return {**result, **reset, "ok": False, "reset_failed": True, "db": self.db}
        if not sql:
            return {**result, "ok": False, "error": "empty SQL statement", "db": self.db}
        try:
            sql.encode("utf-8")
        except UnicodeEncodeError as exc:
            error = f"the SQL is not valid Unicode: {exc.reason} at position {exc.start}"
            return {**result, "ok": False, "error": error, "db": self.db}
        if req.get("fresh"):
            self._renew()
        elif self.broken:
            self._new_main()
        if isinstance(want_db, str) and want_db != self.db and (failed := self._select(want_db)):
            return {**result, **failed, "db": self.db}
        self._run(sql, timeout, max_rows, result)
        result["db"] = self.db
        return result

    def _run(self, sql: str, timeout: float, max_rows: int, result: Response) -> None:
        """Run ``sql`` on the main connection under the watchdog and fill ``result``."""
        cursor = self.conn.cursor()
        failure: pymysql.err.MySQLError | None = None
        broken = False
        self.watchdog.arm(self.conn.thread_id(), timeout)
        try:
            cursor.execute(sql)
            self._read_result(cursor, max_rows, result)
            while cursor.nextset():  # several statements: the last one's result counts
                self._read_result(cursor, max_rows, result)
            if USE_STATEMENT.search(sql):
                cursor.execute("SELECT DATABASE()")
                self.db = cursor.fetchone()[0]
        except pymysql.err.MySQLError as exc:
            failure = exc
            broken = isinstance(exc, pymysql.err.OperationalError) and exc.args[0] in LOST_CONNECTION
        except Exception as exc:  # a value the driver cannot decode, say: the connection is unusable
            broken = True
            _fail(result, f"the result could not be read: {type(exc).__name__}: {exc}", None)
        finally:
            fired = self.watchdog.disarm()
            try:
                cursor.close()
            except Exception:
                broken = True
        if fired:
            _fail(result, f"timed out after {timeout:g} s; the statement was stopped on the server", None)
            result["timed_out"] = True
        elif failure is not None:
            errno, message = error_text(failure)
            if name := unknown_database(self.conn, sql, errno):
                errno, message = ER_BAD_DB, f"Unknown database '{name}'"
            _fail(result, message, errno)
        if fired or broken:
            try:
                self._new_main()
            except (pymysql.err.MySQLError, HelperError) as exc:
                result["stuck"] = True  # the caller must not trust this helper any more
                result["error"] = f"{result['error']}; {exc}"

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
    try:
        killed = session.sweep() if EXCLUSIVE else 0
    except (pymysql.err.MySQLError, HelperError) as exc:
        channel.send({"ready": False, "ok": False, "error": f"cannot clear the account's threads: {exc}"})
        return 1
    handlers = {
        "use": session.op_use,
        "reset": session.op_reset,
        "query": session.op_query,
        "ping": lambda req: {"ok": True},
    }
    ready = {"ready": True, "helper": "sqlhelper", "server": conn.get_server_info(), "user": USER}
    channel.send(ready | {"killed": killed})
    return serve(channel, handlers)


if __name__ == "__main__":
    sys.exit(main())

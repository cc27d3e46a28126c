"""The administrator of a MariaDB server: creates and drops the per-episode accounts (JSON lines).

Runs as the container's OS user ``mysql`` and connects over the unix socket as the MariaDB account of
the same name (unix_socket authentication), which holds every privilege. No agent's statement ever
reaches it: the host sends it account requests only.

Ops (every request may carry "id", echoed back):
  {"op": "create_account", "user", "password", "role", "max_connections"} -> {"ok"}
       the account exists on localhost with only ``role`` (as its default role)
  {"op": "drop_account", "user"}  -> {"ok", "killed"}  its threads killed (and gone), then dropped
  {"op": "kill_account", "user"}  -> {"ok", "killed"}  its threads killed and gone
  {"op": "threads", "user"?}      -> {"ok", "threads": [{"id", "user", "command", "info"}]}
  {"op": "ping"} -> {"ok": true}
"""

from __future__ import annotations

import os
import re
import sys

import pymysql
from jsonl_protocol import (
    Channel,
    Handler,
    Request,
    RequestError,
    Response,
    get_positive_int,
    get_str,
    serve,
)
from sqlhelper import STARTUP_WAIT_S, HelperError, kill_threads, wait_for_server

ADMIN = os.environ.get("INTERCODE_SQL_ADMIN", "mysql")
NAME = re.compile(r"[a-z][a-z0-9_]{0,63}\Z")
PASSWORD = re.compile(r"[A-Za-z0-9_-]{16,128}\Z")


def get_name(req: Request, key: str) -> str:
    value = get_str(req, key)
    if not NAME.match(value) or value in ("root", "mysql", "mariadb.sys", ADMIN):
        raise RequestError(f"{key!r} must be a lower-case account name, got {value!r}")
    return value


class Admin:
    def __init__(self, conn: pymysql.connections.Connection) -> None:
        self.conn = conn

    def _execute(self, sql: str, args: tuple[object, ...] = ()) -> None:
        with self.conn.cursor() as cursor:
            cursor.execute(sql, args)

    def op_create_account(self, req: Request) -> Response:
        user, role = get_name(req, "user"), get_name(req, "role")
        password = get_str(req, "password")
        if not PASSWORD.match(password):
            raise RequestError("'password' must be 16-128 characters of [A-Za-z0-9_-]")
        limit = get_positive_int(req, "max_connections", 4)
        create = f"CREATE USER %s@'localhost' IDENTIFIED BY %s WITH MAX_USER_CONNECTIONS {limit:d}"
        self._execute(create, (user, password))
        self._execute(f"GRANT `{role}` TO %s@'localhost'", (user,))
        self._execute(f"SET DEFAULT ROLE `{role}` FOR %s@'localhost'", (user,))
        return {"ok": True}

    def op_kill_account(self, req: Request) -> Response:
        return {"ok": True, "killed": kill_threads(self.conn, get_name(req, "user"))}

    def op_drop_account(self, req: Request) -> Response:
        user = get_name(req, "user")
        self._execute("DROP USER IF EXISTS %s@'localhost'", (user,))  # no new connection from here on
        return {"ok": True, "killed": kill_threads(self.conn, user)}

    def op_threads(self, req: Request) -> Response:
        user = req.get("user")
        sql = "SELECT ID, USER, COMMAND, INFO FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID()"
        with self.conn.cursor() as cursor:
            if isinstance(user, str):
                cursor.execute(sql + " AND USER = %s", (user,))
            else:
                cursor.execute(sql)
            rows = cursor.fetchall()
        keys = ("id", "user", "command", "info")
        return {"ok": True, "threads": [dict(zip(keys, row, strict=True)) for row in rows]}


def guarded(handler: Handler) -> Handler:
    """Server errors become error responses with the server's message."""

    def run(req: Request) -> Response:
        try:
            return handler(req)
        except pymysql.err.MySQLError as exc:
            message = str(exc.args[1] if len(exc.args) > 1 else exc)
            return {"ok": False, "error": message, "errno": exc.args[0]}
        except HelperError as exc:
            return {"ok": False, "error": str(exc)}

    return run


def main() -> int:
    channel = Channel()
    try:
        conn = wait_for_server(STARTUP_WAIT_S, user=ADMIN, password="")
    except pymysql.err.MySQLError as exc:
        channel.send({"ready": False, "ok": False, "error": f"MariaDB did not accept {ADMIN!r}: {exc}"})
        return 1
    admin = Admin(conn)
    handlers = {
        "create_account": guarded(admin.op_create_account),
        "drop_account": guarded(admin.op_drop_account),
        "kill_account": guarded(admin.op_kill_account),
        "threads": guarded(admin.op_threads),
        "ping": lambda req: {"ok": True},
    }
    channel.send({"ready": True, "helper": "sqladmin", "server": conn.get_server_info(), "user": ADMIN})
    return serve(channel, handlers)


if __name__ == "__main__":
    sys.exit(main())

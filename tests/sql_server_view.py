"""The SQL servers of this test process seen from the outside: the administrator's view over docker exec.

Nothing here goes through the env: ``docker exec <server> mariadb`` runs as the container's OS user
``mysql``, which MariaDB knows as an account with every privilege, so these helpers see (and kill)
every thread of every server this process started, whatever the env lets an agent do.
"""

from __future__ import annotations

import asyncio
import subprocess

from intercode_agents.sandbox.config import LABEL_RUN, RUN_ID


def sql_servers() -> list[str]:
    """IDs of the running MariaDB containers of this process (image ``intercode-agents/sql``)."""
    out = subprocess.run(
        ["docker", "ps", "--no-trunc", "--filter", f"label={LABEL_RUN}={RUN_ID}", "--format",
         "{{.ID}} {{.Image}}"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return [line.split()[0] for line in out.splitlines() if "intercode-agents/sql:" in line]


def admin_sql(container: str, sql: str) -> list[list[str]]:
    """Run ``sql`` on one server as its administrator; the rows, tab-separated fields split."""
    done = subprocess.run(
        ["docker", "exec", container, "mariadb", "-N", "-B", "-e", sql],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    if done.returncode != 0:
        raise AssertionError(f"{sql!r} failed on {container[:12]}: {done.stderr}")
    return [line.split("\t") for line in done.stdout.splitlines()]


def listening(container: str) -> bool:
    """Whether the server in ``container`` accepts connections: a pooled server still starting, or one
    being removed, runs in its container without its socket, and so runs no statement."""
    done = subprocess.run(
        ["docker", "exec", container, "mariadb-admin", "ping"], capture_output=True, text=True, timeout=60
    )
    return done.returncode == 0


def threads_running(marker: str) -> list[tuple[str, int]]:
    """(server, thread id) of every statement whose text holds ``marker``, on every server."""
    found = []
    for server in sql_servers():
        try:
            rows = admin_sql(
                server,
                "SELECT ID, INFO FROM information_schema.PROCESSLIST "
                f"WHERE INFO LIKE '%{marker}%' AND ID <> CONNECTION_ID()",
            )
        except AssertionError:
            if listening(server):
                raise
            continue  # a pooled server starting or being removed: no statement runs on it
        found += [(server, int(row[0])) for row in rows if marker in row[1]]
    return found


async def wait_running(marker: str, timeout: float = 20.0) -> list[tuple[str, int]]:
    """Wait until a statement holding ``marker`` runs on some server; fail after ``timeout``."""
    loop = asyncio.get_running_loop()
    give_up = loop.time() + timeout
    while not (found := await asyncio.to_thread(threads_running, marker)):
        if loop.time() > give_up:
            raise AssertionError(f"no statement with {marker!r} ever ran")
        await asyncio.sleep(0.05)
    return found


def lock_holder(name: str) -> str:
    """The connection id holding user-level lock ``name`` on any server ("NULL" when none does)."""
    holders = [admin_sql(s, f"SELECT IS_USED_LOCK('{name}')")[0][0] for s in sql_servers()]
    return next((h for h in holders if h != "NULL"), "NULL")


KILLER = """
import os, sys, threading, time, pymysql
threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True).start()  # ends with its input
for _ in range(600):  # the server may still be starting
    try:
        conn = pymysql.connect(unix_socket="/run/mysqld/mysqld.sock", user="mysql", autocommit=True)
        break
    except pymysql.err.MySQLError:
        time.sleep(0.1)
print("ready", flush=True)
while True:
    with conn.cursor() as cursor:
        cursor.execute("SELECT ID FROM information_schema.PROCESSLIST WHERE INFO LIKE %s"
                       " AND ID <> CONNECTION_ID()", ("%" + sys.argv[1] + "%",))
        for (thread_id,) in cursor.fetchall():
            try:
                cursor.execute(f"KILL QUERY {thread_id}")
            except pymysql.err.MySQLError:
                pass
    time.sleep(0.005)
"""


class Killer:
    """Kills, on every server, every statement holding ``marker`` as soon as it shows (a process in
    each server polling its process list), until closed."""

    def __init__(self, marker: str) -> None:
        self._procs = []
        for server in sql_servers():
            proc = subprocess.Popen(
                ["docker", "exec", "-i", server, "python3", "-c", KILLER, marker],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            self._procs.append(proc)
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"

    def close(self) -> None:
        for proc in self._procs:
            assert proc.stdin is not None
            proc.stdin.close()  # the killer in the container exits at the end of its input
            proc.wait(timeout=30)

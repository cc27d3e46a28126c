"""The MariaDB servers of the SQL env and the accounts that isolate their sessions.

An event loop runs two servers of the sql image, each a shared sandbox: one for the agents' episodes,
one for the gold queries (no agent's statement ever reaches the gold server). Each server has an
administrator helper (``sqladmin.py``) that creates and drops accounts; every helper that runs
statements (``sqlhelper.py``) owns an account of its own, created for it, with the read-only role and
nothing else. So on the agents' server an episode's account sees only its own threads in the process
list and may kill only those, and the helper clears the account's other threads whenever it starts
or resets.
"""

from __future__ import annotations

import asyncio
import secrets
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from intercode_agents.envs.shared_pools import close_shared, open_shared
from intercode_agents.errors import SessionDied
from intercode_agents.sandbox import Backend, JsonSession, Sandbox

HELPER = ["python3", "/opt/intercode/sqlhelper.py"]
ADMIN = ["python3", "/opt/intercode/sqladmin.py"]
READER_ROLE = "intercode_reader"
ROLE_LABEL = "intercode-agents.sql-server"
# Each env holds one helper (two connections, two threads) on the agents' server; these limits leave
# room for hundreds of concurrent envs (measured: benchmarks/bench_gold.py, tests/envs/sql/test_sql_load.py).
# No sandbox disk cap: its watchdog would stop the server itself. The server's own limits bound what
# a session writes (a temporary table of at most tmp_disk_table_size, within its deadline).
SERVER_OPTIONS: dict[str, Any] = {"memory": "3g", "pids_limit": 4096, "disk_limit": None}
MAX_ACCOUNT_CONNECTIONS = 6  # a helper's two, and room for a restarted helper's while old ones die


class SqlServer:
    """One shared MariaDB sandbox and its administrator helper."""

    def __init__(self, sandbox: Sandbox, purpose: str) -> None:
        self.sandbox = sandbox
        self.purpose = purpose
        self.refs = 0
        self._admin: JsonSession | None = None
        self._admin_lock = asyncio.Lock()
        self._idle: list[SqlClient] = []  # clients lent out by ``borrow``
        self._clients = 0
        self._returned = asyncio.Condition()

    @property
    def image_id(self) -> str:
        return self.sandbox.image_id or self.sandbox.image

    async def admin(self, payload: dict[str, Any], timeout: float = 60.0) -> dict[str, Any]:
        """One request to the administrator helper; a failure raises SessionDied."""
        async with self._admin_lock:
            if self._admin is None:
                self._admin = await self.sandbox.json_session(ADMIN, ready_timeout=90)
        reply = await self._admin.request(payload, timeout=timeout)
        if not reply.get("ok"):
            raise SessionDied(f"the SQL server's administrator failed {payload['op']}: {reply.get('error')}")
        return reply

    async def client(self) -> SqlClient:
        """A new helper with an account of its own."""
        return await SqlClient(self).start()

    @asynccontextmanager
    async def borrow(self, limit: int) -> AsyncIterator[SqlClient]:
        """Lend one of at most ``limit`` clients shared by every user of this server."""
        async with self._returned:
            while not self._idle and self._clients >= limit:
                await self._returned.wait()
            client = self._idle.pop() if self._idle else None
            if client is None:
                self._clients += 1
        if client is None:
            try:
                client = await self.client()
            except BaseException:
                async with self._returned:
                    self._clients -= 1
                    self._returned.notify()
                raise
        try:
            yield client
        finally:
            async with self._returned:
                self._idle.append(client)
                self._returned.notify()

    async def warm(self, limit: int) -> None:
        """Start the clients ``borrow(limit)`` may lend, all at once, so that its first borrowers
        need not wait for a helper to start (and the first failure to start one is raised here)."""
        async with self._returned:
            missing = max(0, limit - self._clients)
            self._clients += missing
        made = await asyncio.gather(*(self.client() for _ in range(missing)), return_exceptions=True)
        async with self._returned:
            for client in made:
                if isinstance(client, SqlClient):
                    self._idle.append(client)
                else:
                    self._clients -= 1
            self._returned.notify_all()
        if failed := [e for e in made if isinstance(e, BaseException)]:
            raise failed[0]

    async def close(self) -> None:
        clients, self._idle = self._idle, []
        for client in clients:
            await client.close()
        admin, self._admin = self._admin, None
        if admin is not None:
            await self.sandbox.forget(admin)


class SqlClient:
    """A ``sqlhelper.py`` process owning one account of a server (created here, dropped at close)."""

    def __init__(self, server: SqlServer) -> None:
        self.server = server
        self.user = f"ic_{secrets.token_hex(8)}"
        self._password = secrets.token_urlsafe(24)
        self.session: JsonSession | None = None

    async def start(self) -> SqlClient:
        await self.server.admin(
            {
                "op": "create_account",
                "user": self.user,
                "password": self._password,
                "role": READER_ROLE,
                "max_connections": MAX_ACCOUNT_CONNECTIONS,
            }
        )
        env = {
            "INTERCODE_SQL_USER": self.user,
            "INTERCODE_SQL_PASSWORD": self._password,
            "INTERCODE_SQL_EXCLUSIVE": "1",
        }
        try:
            # (no agent's process runs in the server's sandbox: its helpers may answer on a socket)
            self.session = await self.server.sandbox.json_session(
                HELPER, env=env, ready_timeout=90, host_socket=True
            )
        except BaseException:
            await self._drop()
            raise
        return self

    async def request(self, payload: dict[str, Any], timeout: float) -> dict[str, Any]:
        """One request to the helper. A helper that restarted has cleared its account's threads
        before it answers; one that cannot vouch for them (``stuck``) is ended and the
        administrator kills the account's threads, so nothing of it runs when this returns."""
        if self.session is None:
            raise SessionDied("the SQL client is closed")
        for key, value in payload.items():
            if isinstance(value, str) and (problem := _unencodable(value)):
                return {"ok": False, "error": f"{key!r} is not valid Unicode text ({problem})"}
        reply = await self.session.request(payload, timeout=timeout)
        if reply.get("stuck"):
            await self.session.close()  # the next request starts a new helper
            await self.server.admin({"op": "kill_account", "user": self.user})
        return reply

    async def kill_threads(self) -> int:
        """Kill every thread of this client's account (through the administrator) and wait until gone."""
        reply = await self.server.admin({"op": "kill_account", "user": self.user})
        return int(reply.get("killed") or 0)

    async def close(self) -> None:
        session, self.session = self.session, None
        if session is not None:
            await self.server.sandbox.forget(session)
        await self._drop()

    async def _drop(self) -> None:
        try:
            await self.server.admin({"op": "drop_account", "user": self.user})
        except Exception:  # the server is going away: its accounts go with it
            pass


def _unencodable(text: str) -> str | None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"a lone surrogate at position {exc.start}"
    return None


_servers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, SqlServer]] = (
    weakref.WeakKeyDictionary()
)


async def open_server(image: str, purpose: str, backend: Backend | None = None) -> SqlServer:
    """The shared server of ``image`` for ``purpose`` ("agents" or "gold") on ``backend`` (the default
    one); each call takes a reference."""
    sandbox = await open_shared(image, backend=backend, labels={ROLE_LABEL: purpose}, **SERVER_OPTIONS)
    servers = _servers.setdefault(asyncio.get_running_loop(), {})
    server = servers.get(sandbox.id)
    if server is None:
        server = servers[sandbox.id] = SqlServer(sandbox, purpose)
    server.refs += 1
    return server


async def close_server(server: SqlServer) -> None:
    """Drop one reference; the last one closes the administrator, its clients and the container."""
    server.refs -= 1
    if server.refs == 0:
        servers = _servers.get(asyncio.get_running_loop(), {})
        if servers.get(server.sandbox.id) is server:
            del servers[server.sandbox.id]
        await server.close()
    await close_shared(server.sandbox)

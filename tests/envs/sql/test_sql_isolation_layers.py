"""Each wall of the SQL isolation on its own: these tests go past the isolation policy (straight to an
env's helper) to show that the accounts, the gold server and the helper's deadlines hold by
themselves, and that an env's account lives exactly as long as the env.
"""

from __future__ import annotations

import asyncio
import secrets
import subprocess
from typing import Any

import pytest

from intercode_agents.datasets import get_task
from intercode_agents.envs import make_env
from intercode_agents.envs.sql.env import SqlEnv
from intercode_agents.envs.sql.gold import clear_gold_cache
from intercode_agents.errors import IntercodeError, SessionDied
from tests.sql_server_view import admin_sql, threads_running, wait_running

SLOW = "SELECT count(*) FROM world_1.city a, world_1.countrylanguage b WHERE a.Population > b.Percentage"
ENDLESS = "SELECT count(*) FROM world_1.city a, world_1.city b, world_1.city c"
KILL_HELPERS = """
import os
for pid in filter(str.isdigit, os.listdir("/proc")):
    if int(pid) == os.getpid():
        continue
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        if b"sqlhelper.py" in f.read():
            os.kill(int(pid), 9)
"""  # the helper dies; its statement goes on on the server


def marked(sql: str) -> tuple[str, str]:
    marker = f"mark{secrets.token_hex(6)}"
    return f"{sql} /* {marker} */", marker


async def raw(env: SqlEnv, sql: str, timeout: float = 30.0, **extra: Any) -> dict[str, Any]:
    """Run ``sql`` on the env's helper, past the isolation policy."""
    assert env.client is not None
    request = {"op": "query", "sql": sql, "timeout": timeout, "max_rows": 1000, "db": env.db, **extra}
    return await env.client.request(request, timeout=timeout)


async def test_an_account_sees_and_kills_only_its_own_threads() -> None:
    statement, marker = marked(SLOW)
    async with make_env("sql", action_timeout=60) as a, make_env("sql") as b:
        assert isinstance(a, SqlEnv) and isinstance(b, SqlEnv)
        await a.reset(task_id="sql/spider/0")
        await b.reset(task_id="sql/spider/0")
        running = asyncio.create_task(a.gym.step(statement))
        ((_, victim),) = await wait_running(marker)
        seen = await raw(b, "SELECT ID, USER, INFO FROM information_schema.PROCESSLIST")
        assert b.client is not None
        assert seen["ok"] and {row[1] for row in seen["rows"]} == {b.client.user}, seen
        killed = await raw(b, f"KILL QUERY {victim}")
        assert killed["errno"] == 1095 and "not owner of thread" in killed["error"], killed
        locked = await raw(b, "SELECT GET_LOCK('shared', 0)")  # what only the policy stops
        assert locked["rows"] == [[1]]
        obs, _, _, _, info = await running
        assert not info["errored"], obs


async def test_the_gold_server_is_not_the_agents_server() -> None:
    clear_gold_cache()  # the gold runs, so the gold server has its helpers' accounts
    async with make_env("sql") as env:
        assert isinstance(env, SqlEnv)
        await env.reset(task_id="sql/spider/0")
        assert env.server is not None and env.gold_server is not None
        assert env.server.sandbox.id != env.gold_server.sandbox.id
        await env.gym.step("SELECT 1")
        await env.gym.step("submit")  # the gold has run: the gold server has accounts, none of them ours
        assert env.client is not None
        users = {row[0] for row in admin_sql(env.gold_server.sandbox.id, "SELECT user FROM mysql.user")}
        assert env.client.user not in users and any(u.startswith("ic_") for u in users)


async def test_the_helper_kills_a_statement_at_its_deadline_whatever_the_session_says() -> None:
    async with make_env("sql") as env:
        assert isinstance(env, SqlEnv)
        await env.reset(task_id="sql/spider/0")
        for lift in ("SET STATEMENT max_statement_time = 0 FOR {}", "SET SESSION max_statement_time = 0; {}"):
            statement, marker = marked(ENDLESS)
            reply = await raw(env, lift.format(statement), timeout=1.5)
            assert reply["timed_out"] and "stopped on the server" in reply["error"], reply
            assert await asyncio.to_thread(threads_running, marker) == []
            again = await raw(env, "SELECT DATABASE()")  # a new connection, the same database
            assert again["rows"] == [["poker_player"]]


async def test_a_stuck_helper_is_replaced_and_its_statement_killed() -> None:
    """The helper never answers in time (its deadline is far, the env's is near): the env restarts
    it, and the new helper clears the account before it answers."""
    statement, marker = marked(ENDLESS)
    async with make_env("sql") as env:
        assert isinstance(env, SqlEnv) and env.client is not None  # its helper starts with the env
        await env.reset(task_id="sql/spider/0")
        assert env.client is not None and env.client.session is not None
        request = {"op": "query", "sql": statement, "timeout": 600, "max_rows": 10, "db": env.db}
        reply = await env.client.session.request(request, timeout=0.5)  # grace: 5 s more
        assert reply.get("restarted"), reply
        assert await asyncio.to_thread(threads_running, marker) == []
        obs, *_ = await env.gym.step("SELECT count(*) FROM poker_player")
        assert obs == "[(5,)]"


async def test_a_killed_helper_is_replaced_without_its_statement() -> None:
    statement, marker = marked(ENDLESS)
    async with make_env("sql", action_timeout=120) as env:
        assert isinstance(env, SqlEnv)
        await env.reset(task_id="sql/spider/0")
        running = asyncio.create_task(env.gym.step(statement))
        await wait_running(marker)
        assert env.server is not None
        container = env.server.sandbox.id
        kill = ["docker", "exec", container, "python3", "-c", KILL_HELPERS]
        await asyncio.to_thread(subprocess.run, kill, check=True)
        obs, _, _, _, info = await running
        assert info["errored"], obs
        assert await asyncio.to_thread(threads_running, marker) == []
        obs, *_ = await env.gym.step("SELECT count(*) FROM poker_player")
        assert obs == "[(5,)]"


async def test_reset_leaves_no_thread_of_the_account_but_the_helpers_own() -> None:
    async with make_env("sql") as env:
        assert isinstance(env, SqlEnv)
        await env.reset(task_id="sql/spider/0")
        assert env.server is not None and env.client is not None
        server, user = env.server.sandbox.id, env.client.user
        for _ in range(3):
            await env.gym.step("SELECT 1")
            await env.reset(task_id="sql/spider/1")
            sql = f"SELECT ID, COMMAND FROM information_schema.PROCESSLIST WHERE USER = '{user}'"
            threads = admin_sql(server, sql)
            assert len(threads) == 2 and all(command == "Sleep" for _, command in threads), threads


async def test_an_envs_account_goes_with_the_env() -> None:
    async with make_env("sql") as env:
        assert isinstance(env, SqlEnv)
        await env.reset(task_id="sql/spider/0")
        assert env.server is not None and env.client is not None
        server, user = env.server.sandbox.id, env.client.user
        async with make_env("sql") as other:  # keeps the server up after the first env closed
            await other.reset(task_id="sql/spider/0")
            assert admin_sql(server, f"SELECT count(*) FROM mysql.user WHERE user = '{user}'") == [["1"]]
            await env.close()
            assert admin_sql(server, f"SELECT count(*) FROM mysql.user WHERE user = '{user}'") == [["0"]]
            sql = f"SELECT count(*) FROM information_schema.PROCESSLIST WHERE USER = '{user}'"
            assert admin_sql(server, sql) == [["0"]]


async def test_unencodable_text_never_raises_on_the_helper_path() -> None:
    async with make_env("sql") as env:
        assert isinstance(env, SqlEnv)
        await env.reset(task_id="sql/spider/0")
        reply = await raw(env, "SELECT '\ud800'")
        assert reply["ok"] is False and "not valid Unicode" in reply["error"], reply
        result = await env._execute("SELECT '\udfff'")  # past validate_action: the policy refuses it
        assert result.errored and "not valid Unicode" in result.observation
        assert (await raw(env, "SELECT 2"))["rows"] == [[2]]


async def test_an_episode_whose_database_is_missing_ends_in_error_not_as_the_agents_fault() -> None:
    task = get_task("sql/spider/0")
    missing = task.model_copy(update={"meta": {**task.meta, "db": "no_such_db"}})
    async with make_env("sql") as env:
        await env.reset(task=missing)
        with pytest.raises(IntercodeError, match="cannot open a session on database 'no_such_db'") as err:
            await env.step("SELECT 1")
        assert not isinstance(err.value, SessionDied) and env.sandbox_lost is None
        await env.reset(task_id="sql/spider/0")  # the next episode opens its session as usual
        assert (await env.step("SELECT DATABASE()")).observation == "[('poker_player',)]"

"""The isolation policy against the real server: the lexer splits as MariaDB does (random texts),
every refused attack really works when it is not refused, and the lists the policy relies on
(MariaDB's keywords, the information_schema tables) are the server's own."""

from __future__ import annotations

import asyncio
import random
import secrets
from collections.abc import AsyncIterator
from typing import Any

import pytest

from intercode_agents.envs import make_env
from intercode_agents.envs.sql.env import SqlEnv
from intercode_agents.envs.sql.isolation import isolation_refusal, mariadb_keywords
from tests.sql_server_view import admin_sql, lock_holder


@pytest.fixture(scope="module")
async def env() -> AsyncIterator[SqlEnv]:
    async with make_env("sql", action_timeout=10) as sql_env:
        assert isinstance(sql_env, SqlEnv)
        await sql_env.reset(task_id="sql/spider/0")
        yield sql_env


async def raw(env: SqlEnv, sql: str) -> dict[str, Any]:
    """``sql`` on the env's helper, past the policy (what the server does with it)."""
    assert env.client is not None
    request = {"op": "query", "sql": sql, "timeout": 10, "max_rows": 10, "db": env.db}
    return await env.client.request(request, timeout=10)


# Pieces whose lexing differs between SQL dialects and readers.
PIECES = ["'", '"', "`", "\\", ";", "--", "-- ", "--\t", "--1", "#", "/*", "*/", "\n", "\r", " ", "a", "1",
          "\u00a0", "x'", "N'", "@", "$$", "(", ")", ",", "/*+", "*"]  # fmt: skip


async def test_the_lexer_hides_no_statement_the_server_runs(env: SqlEnv) -> None:
    """For random texts around a hidden ``SET @probe``: whenever the policy lets a text through, the
    server did not run the SET (it was inside a string or a comment there too)."""
    rng = random.Random(20251111)
    allowed = ran = 0
    for _ in range(600):
        junk = ["".join(rng.choices(PIECES, k=rng.randint(0, 6))) for _ in range(2)]
        text = f"SELECT 1{junk[0]}; SET @probe = 1; SELECT 2{junk[1]}"
        refusal = isolation_refusal(text)
        await raw(env, text)
        probe = await raw(env, "SELECT @probe")
        executed = probe["rows"] == [[1]]
        if executed:
            ran += 1
            await raw(env, "SET @probe = NULL")
            assert refusal is not None, text
        allowed += refusal is None
    print(f"{ran} texts ran the SET (all refused); {allowed} texts were let through")
    assert ran > 50 and allowed > 50  # the texts exercise both sides


HIDDEN = "CONCAT('DO GET', '_LOCK(''{name}'', 0)')"  # no scan of the text can read it
LOCK_ATTACKS = [
    "SELECT GET_LOCK('{name}', 0)",
    "select get_lock ('{name}', 0)",
    "SELECT GET_LOCK/**/('{name}', 0)",
    "SELECT 1 /*!, GET_LOCK('{name}', 0) */",
    "SELECT 1 /*M!100000 , GET_LOCK('{name}', 0) */",
    "SELECT 1 --1, GET_LOCK('{name}', 0)",
    "WITH x AS (SELECT GET_LOCK('{name}', 0) AS l) SELECT l FROM x",
    "(SELECT GET_LOCK('{name}', 0))",
    "PREPARE s FROM {hidden}; EXECUTE s",
    "EXECUTE IMMEDIATE {hidden}",
    "BEGIN NOT ATOMIC EXECUTE IMMEDIATE {hidden}; END",
    "SELECT 1 AS `a\\`; EXECUTE IMMEDIATE {hidden}; SELECT '`'",
    "SELECT 1 --1; EXECUTE IMMEDIATE {hidden}",
]


@pytest.mark.parametrize("template", LOCK_ATTACKS)
async def test_every_refused_lock_attack_works_when_not_refused(env: SqlEnv, template: str) -> None:
    name = f"l{secrets.token_hex(4)}"
    attack = template.format(name=name, hidden=HIDDEN.format(name=name))
    await raw(env, attack)
    assert await asyncio.to_thread(lock_holder, name) != "NULL", f"no lock taken by {attack!r}"
    await raw(env, "SELECT RELEASE_ALL_LOCKS()")
    assert await asyncio.to_thread(lock_holder, name) == "NULL"
    obs, _, _, _, info = await env.gym.step(attack)
    assert info["errored"] and obs.startswith("Error: refused:"), (attack, obs)
    assert await asyncio.to_thread(lock_holder, name) == "NULL", attack


LOOK_ALIKES = {  # text: the server's error (syntax, no such function or table or variable)
    "SELECT ſleep(0)": 1370,  # a stored function of the current database, which has none
    "SELECT ＧＥＴ_LOCK('x', 0)": 1370,
    "SELECT ıs_free_lock('x')": 1370,
    "ſet @a = 1": 1064,
    "SELECT count(*) FROM information_schema.GLOBAL_STATUſ": 1109,
    "SELECT count(*) FROM information_schema.PROCESSLıST": 1109,
    "SELECT count(*) FROM information_schema.ＰＲＯＣＥＳＳＬＩＳＴ": 1109,
    "SELECT @@pseudo_thread_ıd": 1193,
}


@pytest.mark.parametrize("text", sorted(LOOK_ALIKES))
async def test_look_alike_names_do_not_reach_the_built_ins(env: SqlEnv, text: str) -> None:
    """The name scan is ASCII: MariaDB resolves built-in functions, keywords, information_schema
    tables and system variables in ASCII only, so a look-alike spelling names nothing there."""
    assert isolation_refusal(text) is None
    reply = await raw(env, text)
    assert reply["errno"] == LOOK_ALIKES[text], (text, reply)


async def test_the_keyword_list_is_the_servers(env: SqlEnv) -> None:
    assert env.server is not None
    rows = admin_sql(env.server.sandbox.id, "SELECT word FROM information_schema.KEYWORDS")
    words = {row[0] for row in rows if row[0].replace("_", "").isalnum()}
    assert words == mariadb_keywords()


# information_schema tables whose content is the same for every episode, whatever the others do:
# the schema, privileges, the server's fixed configuration, and the session's own traces.
STATIC_INFORMATION_SCHEMA = frozenset(
    """ALL_PLUGINS APPLICABLE_ROLES CHARACTER_SETS CHECK_CONSTRAINTS COLLATIONS
    COLLATION_CHARACTER_SET_APPLICABILITY COLUMNS COLUMN_PRIVILEGES ENABLED_ROLES ENGINES EVENTS FILES
    GEOMETRY_COLUMNS KEYWORDS KEY_COLUMN_USAGE OPTIMIZER_TRACE PARAMETERS PARTITIONS PLUGINS PROFILING
    REFERENTIAL_CONSTRAINTS ROUTINES SCHEMATA SCHEMA_PRIVILEGES SPATIAL_REF_SYS SQL_FUNCTIONS STATISTICS
    TABLES TABLESPACES TABLE_CONSTRAINTS TABLE_PRIVILEGES TRIGGERS USER_PRIVILEGES USER_VARIABLES
    VIEWS""".split()
)


async def test_every_information_schema_table_is_reviewed(env: SqlEnv) -> None:
    """A table not known to be static is refused; a new server version's new table fails here."""
    assert env.server is not None
    sql = "SELECT table_name FROM information_schema.tables WHERE table_schema = 'information_schema'"
    tables = [row[0] for row in admin_sql(env.server.sandbox.id, sql)]
    assert len(tables) > 60
    for table in tables:
        refusal = isolation_refusal(f"SELECT * FROM information_schema.{table}")
        assert (refusal is None) == (table.upper() in STATIC_INFORMATION_SCHEMA), (table, refusal)

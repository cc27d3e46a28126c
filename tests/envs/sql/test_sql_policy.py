"""The SQL lexer and isolation policy on their own (no server): what they split, refuse and allow,
and that no gold query and almost no recorded gpt-3.5 action is refused."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from intercode_agents.datasets import select_tasks
from intercode_agents.envs.sql.isolation import isolation_refusal
from intercode_agents.envs.sql.lexer import lex

GPT35_SQL_LOG = Path(
    os.environ.get("INTERCODE_RESULTS", "/work/shared/intercode-results"),
    "sql/gpt-3.5/ic_sql_multiturn_gpt-3.5_10_turns.json",
)


def first_words(text: str) -> list[str]:
    return [s.tokens[0].upper for s in lex(text).statements]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("SELECT 1 --x; SET @a = 1", ["SELECT", "SET"]),  # `--x` is minus minus x
        ("SELECT 1 -- x; SET @a = 1", ["SELECT"]),
        ("SELECT 1 --\t; SET @a = 1", ["SELECT"]),
        ("SELECT 1 --", ["SELECT"]),
        ("SELECT 1 #x\r; SET @a = 1", ["SELECT"]),  # a carriage return does not end a # comment
        ("SELECT 1 #x\n; SET @a = 1", ["SELECT", "SET"]),
        ("/* a /* b */ SET x */", ["SET"]),  # comments do not nest
        ("SELECT 'it\\'s; SET'", ["SELECT"]),
        ("SELECT 'a''b; SET'", ["SELECT"]),
        ('SELECT "a\\"; SET"', ["SELECT"]),
        ("SELECT '\\\\'; SET @a = 1; '", ["SELECT", "SET", "'"]),
        ("SELECT 1 AS `a\\`; SET @a = 1; `", ["SELECT", "SET", "`"]),  # no escapes in identifiers
        ("SELECT `a``b; SET`", ["SELECT"]),
        ("SELECT 1;\u00a0SET @a = 1", ["SELECT", "\u00a0SET"]),  # U+00A0 is part of a word
        ("SELECT N'a\\'; SET', x'41'; SET @b = 1", ["SELECT", "SET"]),
        ("SELECT 1;; ;", ["SELECT"]),
    ],
)
def test_lexer_splits_statements_as_mariadb(text: str, expected: list[str]) -> None:
    assert first_words(text) == expected


def test_lexer_reports_executable_comments_and_unterminated_text() -> None:
    lexed = lex("SELECT 1 /*! , 2 */, 3 /*M!100000 , 4 */ /*m! 5 */ /* 6 */")
    assert lexed.executable_comments == (9, 23, 41)
    assert lex("SELECT 'abc").unterminated == "string"
    assert lex("SELECT 1 /* x").unterminated == "comment"
    assert lex("SELECT `x").unterminated == "identifier"


REFUSED = {
    "SELECT * FROM information_schema.PROCESSLIST": "PROCESSLIST",
    "show full processlist": "PROCESSLIST",
    "SHOW PROCESSLIST": "PROCESSLIST",
    "KILL QUERY 5": "KILL statements",
    "kill 5": "KILL statements",
    "SELECT GET_LOCK('x', 0)": "GET_LOCK",
    "select get_lock ('x', 0)": "GET_LOCK",
    "SELECT is_used_lock('x'), IS_FREE_LOCK('x')": "IS_USED_LOCK",
    "SELECT RELEASE_ALL_LOCKS()": "RELEASE_ALL_LOCKS",
    "SELECT SLEEP(5)": "SLEEP",
    "SELECT BENCHMARK(1e9, md5('x'))": "BENCHMARK",
    "SELECT CONNECTION_ID()": "CONNECTION_ID",
    "SELECT @@pseudo_thread_id": "PSEUDO_THREAD_ID",
    "SELECT UUID_SHORT()": "UUID_SHORT",
    "SELECT uuid()": "UUID",
    "SHOW GLOBAL STATUS": "SHOW GLOBAL",
    "SHOW STATUS LIKE 'Threads%'": "SHOW STATUS",
    "SHOW SESSION VARIABLES": "SHOW SESSION",
    "SHOW VARIABLES": "SHOW VARIABLES",
    "SHOW OPEN TABLES": "SHOW OPEN",
    "SHOW ENGINE INNODB STATUS": "SHOW ENGINE",
    "SHOW EXPLAIN FOR 5": "SHOW EXPLAIN",
    "SELECT * FROM information_schema.GLOBAL_STATUS": "GLOBAL_STATUS",
    "SELECT * FROM information_schema.session_status": "SESSION_STATUS",
    "SELECT * FROM information_schema.INNODB_TRX": "INNODB_TRX",
    "SELECT * FROM information_schema.SESSION_VARIABLES": "SESSION_VARIABLES",
    "EXPLAIN FOR CONNECTION 5": "FOR CONNECTION",
    "SELECT * FROM singer FOR UPDATE": "locking reads",
    "SELECT * FROM singer LOCK IN SHARE MODE": "locking reads",
    "SELECT * FROM singer WHERE x = 1 FOR UPDATE SKIP LOCKED": "locking reads",
    "SET SESSION max_statement_time = 0": "SET statements",
    "SET STATEMENT max_statement_time = 0 FOR SELECT 1": "SET statements",
    "set @a = 1": "SET statements",
    "SELECT 1; SET sql_mode = 'NO_BACKSLASH_ESCAPES'": "SET statements",
    "SELECT 1 --x; SET @a = 1": "SET statements",
    "SELECT 1 AS `a\\`; SET @a = 1; SELECT '`'": "SET statements",
    "PREPARE s FROM CONCAT('SELECT GET', '_LOCK(1, 0)')": "PREPARE statements",
    "EXECUTE IMMEDIATE 'SELECT 1'": "EXECUTE statements",
    "BEGIN NOT ATOMIC SELECT 1; END": "BEGIN statements",
    "IF 1 THEN SELECT 1; END IF": "IF statements",
    "lbl: LOOP SELECT 1; END LOOP": "labelled",
    "XA START 'x'": "XA statements",
    "HANDLER singer OPEN": "HANDLER statements",
    "LOCK TABLES singer READ": "LOCK statements",
    "START TRANSACTION": "START statements",
    "CALL p()": "CALL statements",
    "DO 1": "DO statements",
    "SELECT 1 /*! , 2 */": "executable comments",
    "SELECT 1 /*M!100000 , 2 */": "executable comments",
    "INSERT INTO singer VALUES (1)": "read-only",
    "DROP TABLE singer": "read-only",
    "SELECT 1\x00": "NUL",
    "SELECT '\ud800'": "not valid Unicode",
}


@pytest.mark.parametrize("text", sorted(REFUSED))
def test_policy_refuses(text: str) -> None:
    reason = isolation_refusal(text)
    assert reason is not None and REFUSED[text] in reason, reason


ALLOWED = [
    "SELECT Name FROM singer WHERE Country = 'France' ORDER BY Age DESC",
    "select count(*) from singer; select 1",
    "(SELECT 1) UNION (SELECT 2)",
    "WITH x AS (SELECT 1 AS a) SELECT a FROM x",
    "VALUES (1), (2)",
    "SHOW TABLES",
    "SHOW FULL TABLES",
    "SHOW DATABASES",
    "SHOW COLUMNS FROM singer",
    "SHOW FULL COLUMNS FROM singer",
    "SHOW INDEX FROM singer",
    "SHOW CREATE TABLE singer",
    "SHOW TABLE STATUS",
    "SHOW WARNINGS",
    "SHOW GRANTS",
    "DESCRIBE singer",
    "DESC singer",
    "EXPLAIN SELECT * FROM singer",
    "USE concert_singer",
    "SELECT MAX(share), MIN(share) FROM tv_series",  # SHARE alone is a column name
    "SELECT * FROM t WHERE name = 'lock in share mode'",  # words in strings are data
    "SELECT Major_Record_Format FROM orchestra ORDER BY RAND() LIMIT 1",
    "SELECT * FROM information_schema.columns WHERE table_name = 'orchestra'",
    "Can you tell me the name of the table?",  # not SQL: the server says so
    "SELECT 1 -- a comment",
    "SELECT 1 /* a comment */",
]


@pytest.mark.parametrize("text", ALLOWED)
def test_policy_allows(text: str) -> None:
    assert isolation_refusal(text) is None


def test_no_gold_query_is_refused() -> None:
    tasks = select_tasks("sql", "spider") + select_tasks("sql", "wikisql") + select_tasks("sql", "mini")
    assert len(tasks) > 1200
    assert [(t.id, isolation_refusal(t.gold)) for t in tasks if isolation_refusal(t.gold)] == []


# The only recorded gpt-3.5 actions the policy refuses: five lines of prose the server would reject
# as syntax errors, and two writes the read-only account would refuse.
GPT35_REFUSED = {
    "To get started, I need to know the name ": "TO statements",
    "Output:   Sorry, I cannot provide the ou": "labelled",
    "Before proceeding, can you please confir": "BEFORE statements",
    "Table: poker_players Columns: - id (inte": "TABLE statements",
    "Table: pets Columns: - id (int) - name (": "TABLE statements",
    "CREATE TABLE poker_players ( id INT PRIM": "read-only",
    "INSERT INTO poker_players (id, name, ear": "read-only",
}


def test_recorded_gpt35_actions_refused() -> None:
    if not GPT35_SQL_LOG.is_file():
        pytest.skip(f"the recorded gpt-3.5 SQL log is not at {GPT35_SQL_LOG}")
    log = json.loads(GPT35_SQL_LOG.read_text())
    actions = [a for episode in log.values() for a in episode["turn_history"]["actions"]]
    refused = {a[:40]: isolation_refusal(a) for a in actions if isolation_refusal(a)}
    assert len(actions) == 7499
    assert set(refused) == set(GPT35_REFUSED)
    for prefix, reason in refused.items():
        assert GPT35_REFUSED[prefix] in (reason or ""), (prefix, reason)

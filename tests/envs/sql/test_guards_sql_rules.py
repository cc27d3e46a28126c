"""The SQL guard's rules, statement by statement: the reads that pass, and every refusal with its reason
(the statements are split as MariaDB splits them, then parsed by sqlglot)."""

from __future__ import annotations

import pytest

from intercode_agents.envs.sql.guard import sql_refusal

READS = [
    "SELECT 1",
    "WITH a AS (SELECT 1) SELECT * FROM a",
    "SELECT 1 UNION SELECT 2",
    "SHOW TABLES",
    "DESCRIBE t",
    "EXPLAIN SELECT 1",
    "SHOW TABLES; SELECT * FROM t",
    "SELECT 1 -- ; DROP TABLE t\n",  # '-- ' starts a comment: the DROP is never run
    "SELECT 1 #; DROP TABLE t",
    "SELECT * FROM t WHERE a IN (SELECT a FROM u) ORDER BY 1 LIMIT 3",
]

REFUSED = [
    ("SELECT 1; DROP TABLE t", "statement 2 of 2 (DROP TABLE t): DROP TABLE is DDL"),
    ("SELECT 1 --;DROP TABLE t", "statement 2 of 2"),  # '--' without a space is no comment in MariaDB
    ("SELECT 'a;' ; DELETE FROM t", "DELETE writes data"),
    ("SELECT 1 /*! ; DROP TABLE t */", "executable comment"),
    ("INSERT INTO t VALUES (1)", "INSERT writes data"),
    ("UPDATE t SET a=1", "UPDATE writes data"),
    ("REPLACE INTO t VALUES (1)", "not a read"),
    ("CREATE TABLE x (a int)", "DDL"),
    ("TRUNCATE t", "DDL"),
    ("EXPLAIN DELETE FROM t", "DELETE writes data"),
    ("ANALYZE DELETE FROM t", "cannot parse"),  # MariaDB's ANALYZE runs the statement
    ("SELECT * INTO OUTFILE '/tmp/x' FROM t", "INTO OUTFILE"),
    ("SELECT * FROM t INTO DUMPFILE '/tmp/x'", "INTO DUMPFILE"),
    ("SELECT LOAD_FILE('/etc/passwd')", "LOAD_FILE"),
    ("SELECT sleep (1)", "SLEEP"),
    ("SELECT BENCHMARK(1000000, MD5('a'))", "BENCHMARK"),
    ("SELECT GET_LOCK('a', 1)", "user-level lock"),
    ("LOCK TABLES t READ", "not a read"),
    ("SELECT * FROM t FOR UPDATE", "locking read"),
    ("SELECT * FROM t LOCK IN SHARE MODE", "locking read"),
    ("SET @a = 1", "session variables"),
    ("SET autocommit=0", "session variables"),
    ("SELECT @a := 1", "assigns a session variable"),
    ("SELECT 1 INTO @v", "session variable"),
    ("SELECT NEXTVAL(s)", "sequence"),
    ("SELECT SETVAL(s, 10)", "sequence"),
    ("GRANT ALL ON *.* TO x", "not a read"),
    ("SELEC 1 FROM", "sqlglot cannot parse it"),
    ('SELECT "a\\";DROP TABLE t', "unterminated string"),
    ("SELECT `a\\` FROM t", "backslash"),
    ("", "no SQL statement"),
]


@pytest.mark.parametrize("text", READS)
def test_reads_pass(text: str) -> None:
    assert sql_refusal(text) is None


@pytest.mark.parametrize(("text", "reason"), REFUSED)
def test_everything_else_is_refused_with_its_reason(text: str, reason: str) -> None:
    refusal = sql_refusal(text)
    assert refusal is not None and reason in refusal, refusal

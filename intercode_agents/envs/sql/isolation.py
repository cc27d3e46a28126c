"""The isolation policy in front of the shared MariaDB server: what an agent's SQL may not do.

Each episode has an account of its own with SELECT and SHOW VIEW only (no PROCESS, no CONNECTION
ADMIN, no SUPER), so the server itself keeps the process list, ``KILL`` and every write to the
episode's own threads. What privileges cannot stop is refused here, before the server sees it:

- statements other than reading ones: only SELECT, WITH, VALUES, a parenthesised query, SHOW (of the
  schema, never of status, processes, open tables or variables), DESCRIBE/DESC, EXPLAIN (not ``FOR
  CONNECTION``) and USE run. That leaves out SET (which lifts limits and changes how the server reads
  text), PREPARE/EXECUTE (SQL built from strings, which no scan can read), KILL, XA, HANDLER, LOCK,
  transactions and compound statements (``BEGIN NOT ATOMIC``, ``IF ... END IF``, loops);
- names that reach shared state from inside a query, wherever they occur (strings and comments
  included): user-level locks, SLEEP and BENCHMARK, counters shared by every connection
  (CONNECTION_ID, UUID, UUID_SHORT, ``@@pseudo_thread_id``), and the information_schema tables of
  processes, status, statistics and variables;
- locking reads (``FOR UPDATE``, ``LOCK IN SHARE MODE``), whose row locks other episodes would wait on;
- executable comments (``/*! ... */``, ``/*M! ... */``), which the server runs and a reader skips.

Statements are found by :mod:`~intercode_agents.envs.sql.lexer`, which splits text as MariaDB does.
A first word that is not a MariaDB keyword at all (plain English, say) goes to the server, which
answers with its syntax error, as the original InterCode did; a keyword that is not allowed is
refused. A refusal is a short reason, shown to the agent as an error observation.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from intercode_agents.envs.sql.lexer import Statement, Token, lex

ALLOWED_STATEMENTS = ("SELECT", "WITH", "VALUES", "SHOW", "DESCRIBE", "DESC", "EXPLAIN", "USE")
WRITE_STATEMENTS = frozenset(
    "INSERT UPDATE DELETE REPLACE CREATE DROP ALTER TRUNCATE RENAME GRANT REVOKE LOAD".split()
)
# SHOW <what>: the schema and the session's own diagnostics. Status, processes, open tables,
# variables (they include the connection id), engines' internals and replication are left out.
SHOW_ALLOWED = frozenset(
    "DATABASES SCHEMAS TABLES COLUMNS FIELDS INDEX INDEXES KEYS CREATE CHARACTER CHARSET COLLATION "
    "WARNINGS ERRORS COUNT GRANTS PRIVILEGES TRIGGERS".split()
)
SHOW_PREFIXES = {"FULL": SHOW_ALLOWED, "EXTENDED": SHOW_ALLOWED, "TABLE": frozenset({"STATUS"})}

# Names refused anywhere in the text (an ASCII word match, case-insensitive; MariaDB resolves
# built-in names in ASCII only, so a look-alike spelling is an unknown function there).
DENIED_NAMES = (
    # user-level locks: held across statements, visible to every connection
    "GET_LOCK",
    "RELEASE_LOCK",
    "RELEASE_ALL_LOCKS",
    "IS_FREE_LOCK",
    "IS_USED_LOCK",
    # load and waiting
    "SLEEP",
    "BENCHMARK",
    "MASTER_POS_WAIT",
    "MASTER_GTID_WAIT",
    # server-wide counters
    "CONNECTION_ID",
    "PSEUDO_THREAD_ID",
    "UUID",
    "UUID_SHORT",
    "SYS_GUID",
    # information_schema tables of processes, status, statistics and variables
    "PROCESSLIST",
    "GLOBAL_STATUS",
    "SESSION_STATUS",
    "GLOBAL_VARIABLES",
    "SESSION_VARIABLES",
    "SYSTEM_VARIABLES",
    "CLIENT_STATISTICS",
    "USER_STATISTICS",
    "TABLE_STATISTICS",
    "INDEX_STATISTICS",
    "KEY_CACHES",
    "QUERY_CACHE_INFO",
    "QUERY_RESPONSE_TIME",
    "METADATA_LOCK_INFO",
    r"INNODB_\w+",
    r"THREAD_POOL_\w+",
)
_DENIED = re.compile(r"\b(" + "|".join(DENIED_NAMES) + r")\b", re.IGNORECASE | re.ASCII)
# Word sequences refused inside a statement (locking reads).
DENIED_SEQUENCES = (("FOR", "UPDATE"), ("LOCK", "IN", "SHARE", "MODE"))


@cache
def mariadb_keywords() -> frozenset[str]:
    """MariaDB's keywords (information_schema.KEYWORDS of the server in the sql image)."""
    path = Path(__file__).with_name("mariadb_keywords.txt")
    lines = path.read_text(encoding="ascii").splitlines()
    return frozenset(line.strip() for line in lines if line.strip() and not line.startswith("#"))


def isolation_refusal(text: str) -> str | None:
    """Why ``text`` may not run on the shared server, or None when it may."""
    if "\x00" in text:
        return "the text contains a NUL byte"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"the text is not valid Unicode (a lone surrogate at position {exc.start})"
    lexed = lex(text)
    if lexed.executable_comments:
        return "executable comments (/*! ... */, /*M! ... */) are not allowed"
    if found := _DENIED.search(text):
        return f"{found.group(1).upper()} is not allowed: it reaches state shared with other episodes"
    for statement in lexed.statements:
        if reason := statement_refusal(statement):
            return reason
    return None


def statement_refusal(statement: Statement) -> str | None:
    """Why one statement may not run, or None (names and comments are checked on the whole text)."""
    tokens = [t for t in statement.tokens if not (t.kind == "punct" and t.text == "(")]
    if not tokens:
        return None
    first = tokens[0]
    kind = first.upper
    if first.kind != "word" or kind not in ALLOWED_STATEMENTS:
        return _start_refusal(first, tokens[1] if len(tokens) > 1 else None)
    words = [t.upper for t in tokens if t.kind == "word"]
    if kind == "SHOW" and (reason := _show_refusal(words[1:])):
        return reason
    if kind in ("EXPLAIN", "DESCRIBE", "DESC") and words[1:2] == ["FOR"]:
        return f"{kind} FOR CONNECTION is not allowed: it shows another connection's statement"
    for sequence in DENIED_SEQUENCES:
        if _contains(words, sequence):
            return f"locking reads ({' '.join(sequence)}) are not allowed: other episodes would wait on them"
    return None


def _start_refusal(first: Token, second: Token | None) -> str | None:
    if first.kind == "word" and first.upper in mariadb_keywords():
        if first.upper in WRITE_STATEMENTS:
            return f"the database is read-only for the agent ({first.upper} statements do not run)"
        allowed = ", ".join(ALLOWED_STATEMENTS)
        return f"{first.upper} statements are not allowed; the statements that run are {allowed}"
    if second is not None and second.kind == "punct" and second.text == ":":
        return "labelled compound statements are not allowed"
    return None  # not a statement at all: the server answers with its syntax error


def _show_refusal(words: list[str]) -> str | None:
    what = words[0] if words else ""
    allowed = SHOW_ALLOWED
    if what in SHOW_PREFIXES:
        allowed = SHOW_PREFIXES[what]
        what = f"{what} {words[1] if len(words) > 1 else ''}".strip()
        if (words[1] if len(words) > 1 else "") in allowed:
            return None
    elif what in allowed:
        return None
    return f"SHOW {what} is not allowed: only the schema (databases, tables, columns, indexes) is shown"


def _contains(words: list[str], sequence: tuple[str, ...]) -> bool:
    n = len(sequence)
    return any(tuple(words[i : i + n]) == sequence for i in range(len(words) - n + 1))

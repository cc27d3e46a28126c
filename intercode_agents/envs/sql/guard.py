"""The SQL guard: only statements that read pass, each refusal with its reason.

This is a switchable safeguard, stricter than the isolation policy the SQL env always applies
(:mod:`intercode_agents.envs.sql.isolation`), and separate from it: the isolation policy keeps
episodes apart on a shared server, the guard keeps an agent's exploration from ever asking for a
change. How a text is judged:

1. It is split into statements by :mod:`intercode_agents.envs.sql.lexer`, which follows MariaDB's own
   rules, so the statements are the ones the server would run (a ``DROP`` hidden after a ``;``, a
   comment or a string is its own statement here). Executable comments (``/*! ... */``, which the
   server runs and every reader skips), text that ends inside a string, identifier or comment, and
   backtick identifiers holding a backslash (which parsers read differently from the server) are
   refused outright.
2. Each statement's tokens (comments dropped) are scanned for what a read must never do: writing a
   file (``INTO OUTFILE``, ``INTO DUMPFILE``), reading one (``LOAD_FILE``), waiting or loading the
   server (``SLEEP``, ``BENCHMARK``), user-level locks (``GET_LOCK`` and its kin), setting session
   variables (``INTO @v``, ``@v := ...``).
3. Each statement is parsed by sqlglot (MySQL dialect) from those tokens. What sqlglot cannot parse is
   refused. What it parses passes only as SELECT (``WITH ... SELECT``, set operations of SELECTs),
   SHOW, DESCRIBE/DESC or EXPLAIN, with no write, DDL, SET or locking clause (``FOR UPDATE``,
   ``LOCK IN SHARE MODE``) anywhere inside.

A refusal is a reason (``statement 2 of 2 is DROP TABLE: DDL changes the schema``); the callers show
it to the agent as an error observation and record it.
"""

from __future__ import annotations

import logging
from functools import cache

from intercode_agents.envs.sql.lexer import Statement, Token, lex
from intercode_agents.errors import ConfigError

# Function names a read must never call: (name, why).
DENIED_CALLS: dict[str, str] = {
    "LOAD_FILE": "LOAD_FILE reads a file of the server",
    "SLEEP": "SLEEP holds the server",
    "BENCHMARK": "BENCHMARK loads the server",
    "GET_LOCK": "GET_LOCK takes a user-level lock",
    "RELEASE_LOCK": "RELEASE_LOCK changes a user-level lock",
    "RELEASE_ALL_LOCKS": "RELEASE_ALL_LOCKS changes user-level locks",
    "IS_FREE_LOCK": "IS_FREE_LOCK reads user-level locks",
    "IS_USED_LOCK": "IS_USED_LOCK reads user-level locks",
    "MASTER_POS_WAIT": "MASTER_POS_WAIT waits on replication",
    "MASTER_GTID_WAIT": "MASTER_GTID_WAIT waits on replication",
    "NEXTVAL": "NEXTVAL advances a sequence (a write)",
    "SETVAL": "SETVAL sets a sequence (a write)",
}


@cache
def _sqlglot() -> tuple[object, object]:
    try:
        import sqlglot
        from sqlglot import exp
    except ImportError as exc:  # pragma: no cover - sqlglot is a dependency
        raise ConfigError("the SQL guard needs sqlglot: pip install sqlglot") from exc
    logging.getLogger("sqlglot").setLevel(logging.ERROR)  # its "falling back to Command" warnings
    return sqlglot, exp


def _token_text(statement: Statement) -> str:
    """The statement as the server reads it: its tokens, with each run of whitespace and comments
    between two of them made one space (tokens that touch still touch, so ``>=`` stays one)."""
    pieces: list[str] = []
    end = None
    for token in statement.tokens:
        offset = token.start - statement.start
        if end is not None and offset > end:
            pieces.append(" ")
        pieces.append(token.text)
        end = offset + len(token.text)
    return "".join(pieces)


def _scan(tokens: tuple[Token, ...]) -> str | None:
    """What the tokens alone show a read must not do, or None."""
    for i, token in enumerate(tokens):
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if token.kind == "identifier" and "\\" in token.text:
            return "a backtick identifier holds a backslash, which parsers and the server read differently"
        if token.kind != "word" and token.text != ":":
            continue
        word = token.upper
        if word in DENIED_CALLS and nxt is not None and nxt.text == "(":
            return DENIED_CALLS[word]
        if word == "INTO" and nxt is not None:
            if nxt.upper in ("OUTFILE", "DUMPFILE"):
                return f"INTO {nxt.upper} writes a file on the server"
            if nxt.text == "@":
                return "SELECT ... INTO @variable sets a session variable"
        if token.text == ":" and nxt is not None and nxt.text == "=":
            return ":= assigns a session variable"
    return None


_WRITES = ("Insert", "Update", "Delete", "Merge")
_DDL = ("Create", "Drop", "Alter", "TruncateTable")


def _kind_of(node: object, statement: Statement) -> str:
    """What a statement node does, in words: ``DROP TABLE is DDL: it changes the schema``."""
    name = type(node).__name__
    kind = getattr(node, "args", {}).get("kind")
    words = ("TRUNCATE" if name == "TruncateTable" else name.upper()) + (
        f" {kind.upper()}" if isinstance(kind, str) else ""
    )
    if name in _WRITES:
        return f"{words} writes data"
    if name in _DDL:
        return f"{words} is DDL: it changes the schema"
    if name == "Set":
        return "SET changes session variables"
    if name == "Use":
        return "USE changes the session's database (the task's database is already selected)"
    first = statement.tokens[0].upper if statement.tokens else "?"
    return f"{first} ... is not a read (sqlglot reads it as {name}; SELECT, SHOW, DESCRIBE, EXPLAIN pass)"


def _judge_tree(tree: object, statement: Statement) -> str | None:
    """Why a parsed statement is not a plain read, or None."""
    _, exp = _sqlglot()
    reads = (exp.Select, exp.SetOperation, exp.Subquery, exp.Show, exp.Describe)  # type: ignore[attr-defined]
    if not isinstance(tree, reads):
        return _kind_of(tree, statement)
    changes = tuple(getattr(exp, name) for name in (*_WRITES, *_DDL, "Set", "Use", "Command"))
    for node in tree.walk():
        if isinstance(node, exp.Lock):  # type: ignore[attr-defined]
            return "a locking read (FOR UPDATE, LOCK IN SHARE MODE) takes row locks"
        if isinstance(node, exp.Into):  # type: ignore[attr-defined]
            return "SELECT ... INTO writes its result somewhere"
        if isinstance(node, changes):
            return f"it holds {_kind_of(node, statement)}"
    return None


def _judge_statement(statement: Statement) -> str | None:
    if reason := _scan(statement.tokens):
        return reason
    sqlglot, _ = _sqlglot()
    try:
        trees = sqlglot.parse(_token_text(statement), read="mysql")  # type: ignore[attr-defined]
    except Exception as exc:  # sqlglot's ParseError and TokenError, and anything else it raises
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return f"sqlglot cannot parse it ({first}), so it is not known to be a read"
    trees = [tree for tree in trees if tree is not None]
    if len(trees) != 1:
        return f"sqlglot reads {len(trees)} statements in it, so it is not known to be one read"
    return _judge_tree(trees[0], statement)


def _preview(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def sql_refusal(text: str) -> str | None:
    """Why the SQL guard refuses ``text`` (a reason for the agent), or None when every statement reads."""
    lexed = lex(text)
    if lexed.executable_comments:
        return "an executable comment (/*! ... */) holds SQL the server runs and a reader skips"
    if lexed.unterminated:
        return f"the text ends inside an unterminated {lexed.unterminated}"
    if not lexed.statements:
        return "there is no SQL statement in it"
    total = len(lexed.statements)
    for number, statement in enumerate(lexed.statements, 1):
        reason = _judge_statement(statement)
        if reason is not None:
            where = f"statement {number} of {total} ({_preview(statement.text)})" if total > 1 else ""
            return f"{where}: {reason}" if where else reason
    return None

"""SQL text split into statements and tokens exactly as MariaDB's own lexer splits it.

A policy that reads SQL must see the statements the server will run, not the ones a generic parser
thinks are there. So this lexer follows MariaDB's rules (server 10.11, the default ``sql_mode``, a
utf8mb4 connection) rather than a general MySQL grammar:

- whitespace is ASCII only (tab, line feed, vertical tab, form feed, carriage return, space); any
  other character, U+00A0 included, belongs to a word;
- ``#`` starts a comment up to the next line feed (a carriage return does not end it);
- ``--`` starts one only when an ASCII space or control character, or the end of the text, follows
  (``1--x`` is ``1 - -x``);
- ``/* ... */`` does not nest; ``/*!`` and ``/*M!`` are *executable* comments, whose content the
  server runs: they are reported, never skipped;
- ``'...'`` and ``"..."`` are strings, where a backslash escapes the next character and a doubled quote
  stands for itself; ```...``` is an identifier, where only a doubled backtick stands for itself
  (a backslash is an ordinary character there);
- a ``;`` outside all of these ends a statement (the server runs several statements per request).

``tests/envs/sql/test_sql_policy_server.py`` checks these rules against the real server with random texts.
The lexer only splits; it neither parses nor judges (see :mod:`intercode_agents.envs.sql.isolation`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

TokenKind = Literal["word", "string", "identifier", "punct"]

# One alternative per lexical element, tried in this order at each position (see the module
# docstring); the groups name what was found. Quoted text is matched possessively (``*+``): a quote
# that never closes makes the rest of the text one unterminated element, as MariaDB reads it.
_ELEMENT = re.compile(
    r"""
      (?P<space>[\t\n\x0b\x0c\r\ ]+)
    | (?P<line_comment>\#[^\n]*(?:\n|\Z) | --(?:[\x00-\x09\x0b-\x20\x7f][^\n]*)?(?:\n|\Z))
    | (?P<exec_comment>/\*[Mm]?!(?:.*?\*/|.*\Z))
    | (?P<comment>/\*.*?\*/)
    | (?P<open_comment>/\*.*\Z)
    | (?P<string>'(?:[^'\\]|\\.|'')*+' | "(?:[^"\\]|\\.|"")*+")
    | (?P<open_string>['"].*\Z)
    | (?P<identifier>`(?:[^`]|``)*+`)
    | (?P<open_identifier>`.*\Z)
    | (?P<end>;)
    | (?P<word>[A-Za-z0-9_$\x80-\U0010ffff]+)
    | (?P<punct>.)
    """,
    re.VERBOSE | re.DOTALL,
)
_UNTERMINATED = {"open_comment": "comment", "open_string": "string", "open_identifier": "identifier"}
_KINDS: dict[str, TokenKind] = {
    "string": "string",
    "open_string": "string",
    "identifier": "identifier",
    "open_identifier": "identifier",
    "word": "word",
    "punct": "punct",
}


@dataclass(frozen=True)
class Token:
    kind: TokenKind
    text: str  # a word as written; a string or identifier with its quotes; one punctuation character
    start: int  # offset in the whole text

    @property
    def upper(self) -> str:
        """A word in ASCII upper case (MariaDB matches keywords and built-in names in ASCII only)."""
        return self.text.upper() if self.kind == "word" and self.text.isascii() else self.text


@dataclass(frozen=True)
class Statement:
    """One statement: its source (without the ending ``;``) and its tokens (comments dropped)."""

    text: str
    start: int
    tokens: tuple[Token, ...]

    @property
    def empty(self) -> bool:
        return not self.tokens


@dataclass(frozen=True)
class Lexed:
    statements: tuple[Statement, ...]
    executable_comments: tuple[int, ...]  # offsets of ``/*!`` and ``/*M!`` comments
    unterminated: str | None  # "string", "identifier" or "comment" when the text ends inside one


def lex(text: str) -> Lexed:
    """Split ``text`` into the statements MariaDB would run, each with its tokens."""
    statements: list[Statement] = []
    executable: list[int] = []
    tokens: list[Token] = []
    unterminated: str | None = None
    stmt_start = 0
    for found in _ELEMENT.finditer(text):
        what = found.lastgroup
        assert what is not None
        if what == "end":
            statements.append(Statement(text[stmt_start : found.start()], stmt_start, tuple(tokens)))
            tokens, stmt_start = [], found.end()
        elif what in _KINDS:
            tokens.append(Token(_KINDS[what], found.group(), found.start()))
        elif what == "exec_comment":
            executable.append(found.start())
        unterminated = _UNTERMINATED.get(what, unterminated)
    statements.append(Statement(text[stmt_start:], stmt_start, tuple(tokens)))
    return Lexed(tuple(s for s in statements if not s.empty), tuple(executable), unterminated)

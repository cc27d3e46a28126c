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

``tests/test_sql_policy_server.py`` checks these rules against the real server with random texts.
The lexer only splits; it neither parses nor judges (see :mod:`intercode_agents.sqlcheck.isolation`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

TokenKind = Literal["word", "string", "identifier", "punct"]

_SPACE = frozenset("\t\n\x0b\x0c\r ")
_WORD_ASCII = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$")


def _word_char(ch: str) -> bool:
    return ch in _WORD_ASCII or ord(ch) >= 0x80


def _opens_dash_comment(text: str, i: int) -> bool:
    """Whether ``--`` at ``i`` starts a comment: the next character is ASCII space or control, or none."""
    if not text.startswith("--", i):
        return False
    if i + 2 >= len(text):
        return True
    nxt = ord(text[i + 2])
    return nxt <= 0x20 or nxt == 0x7F


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
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in _SPACE:
            i += 1
        elif ch == "#" or _opens_dash_comment(text, i):
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
        elif text.startswith("/*", i):
            if text.startswith("!", i + 2) or text[i + 2 : i + 4] in ("M!", "m!"):
                executable.append(i)
            end = text.find("*/", i + 2)
            if end < 0:
                unterminated, i = "comment", n
            else:
                i = end + 2
        elif ch in "'\"":
            end = _string_end(text, i)
            if end < 0:
                unterminated, end = "string", n
            tokens.append(Token("string", text[i:end], i))
            i = end
        elif ch == "`":
            end = _identifier_end(text, i)
            if end < 0:
                unterminated, end = "identifier", n
            tokens.append(Token("identifier", text[i:end], i))
            i = end
        elif ch == ";":
            statements.append(Statement(text[stmt_start:i], stmt_start, tuple(tokens)))
            tokens, stmt_start = [], i + 1
            i += 1
        elif _word_char(ch):
            j = i + 1
            while j < n and _word_char(text[j]):
                j += 1
            tokens.append(Token("word", text[i:j], i))
            i = j
        else:
            tokens.append(Token("punct", ch, i))
            i += 1
    statements.append(Statement(text[stmt_start:], stmt_start, tuple(tokens)))
    return Lexed(tuple(s for s in statements if not s.empty), tuple(executable), unterminated)


def _string_end(text: str, i: int) -> int:
    """The offset just past the string opened at ``i``, or -1 when it never closes."""
    quote, j, n = text[i], i + 1, len(text)
    while j < n:
        ch = text[j]
        if ch == "\\":
            j += 2
        elif ch == quote:
            if j + 1 < n and text[j + 1] == quote:
                j += 2
            else:
                return j + 1
        else:
            j += 1
    return -1


def _identifier_end(text: str, i: int) -> int:
    """The offset just past the backtick identifier opened at ``i``, or -1 when it never closes."""
    j, n = i + 1, len(text)
    while j < n:
        if text[j] == "`":
            if j + 1 < n and text[j + 1] == "`":
                j += 2
            else:
                return j + 1
        else:
            j += 1
    return -1

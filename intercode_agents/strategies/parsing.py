"""Turn a chat model's reply into one action (and its thought), or say why there is none.

Accepted shapes, in order of preference:

- an ``Action:`` label (``Action:``, ``Action 2:``, ``**Action:**``): the text after it, or the first
  code fence after it, is the action; the text before it is the thought (a ``Thought:`` label is
  dropped), and anything from a hallucinated ``Observation:`` on is ignored;
- a code fence, with or without a language tag (the text before it is the thought);
- a bare reply: one line, or several lines that read as code in the env's language (SQL starting with
  SELECT/WITH/..., Python starting with def/import/...).

``submit`` forms are recognised with stray quotes or backticks around the keyword or the argument
(``submit``, ```submit```, ``submit picoCTF{...}``, ``submit `func_name` ``) and normalised to
``submit`` or ``submit <argument>``. Otherwise the action text is kept as written: never lower-cased,
inner quotes, backslashes and indentation intact (a common indentation of every line is removed).
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from typing import Literal

FENCE = "```"
_QUOTES = "`'\""
_LABEL = r"^[ \t>#*_]*{word}(?:[ \t]*\d+)?[ \t*_]*:[ \t*_]*"
_ACTION = re.compile(_LABEL.format(word="action"), re.IGNORECASE | re.MULTILINE)
_THOUGHT = re.compile(_LABEL.format(word="thought"), re.IGNORECASE | re.MULTILINE)
_OBSERVATION = re.compile(_LABEL.format(word="observation"), re.IGNORECASE | re.MULTILINE)
_FENCE_TAG = re.compile(r"^[A-Za-z0-9_+#.-]+$")
_LANGUAGE_TAGS = {
    "bash",
    "sh",
    "shell",
    "console",
    "zsh",
    "sql",
    "mysql",
    "python",
    "py",
    "python3",
    "text",
    "txt",
}
_SUBMIT = re.compile(r"^[`'\"]*submit[`'\"]*(?=$|[\s:])[ \t]*:?[ \t]*(.*)$", re.IGNORECASE)
_IDENTIFIER_CALL = re.compile(r"^([A-Za-z_]\w*)\s*\(\s*\)$")
_CODE_STARTS = {
    "sql": re.compile(r"^\s*(select|with|show|describe|desc|explain|use|insert|update|delete)\b", re.I),
    "python": re.compile(r"^\s*(def|class|import|from|for|while|if|try|with|print|assert|return|@|#)\b"),
}
_PROSE_START = re.compile(r"^[A-Z][a-z']*\b")
_SQL_KEYWORDS = {"select", "with", "show", "describe", "desc", "explain", "use"}


@dataclass(frozen=True)
class ParsedAction:
    """A recognised action. ``action`` is exactly what goes to ``env.step``."""

    action: str
    thought: str | None = None
    submit_argument: str | None = None  # None unless a submit; "" for a bare submit
    valid: Literal[True] = True

    @property
    def is_submit(self) -> bool:
        return self.submit_argument is not None


@dataclass(frozen=True)
class InvalidReply:
    """A reply without a usable action; ``reason`` is written to be shown to the model."""

    reason: str
    thought: str | None = None
    valid: Literal[False] = False


ParseResult = ParsedAction | InvalidReply


def parse_reply(reply: str, *, language: str | None = None) -> ParseResult:
    """Extract the action of ``reply``; ``language`` (bash, sql, python, ctf) helps read bare code."""
    text = reply.replace("\r\n", "\n")
    if not text.strip():
        return InvalidReply("the reply is empty")
    fences = _fence_spans(text)
    label = _first_outside(_ACTION, text, fences)
    if label is not None:
        thought = _clean_thought(text[: label.start()])
        body = _action_after_label(text, label.end(), fences)
        if body is None:
            return InvalidReply("the Action is empty", thought)
        return _finish(body, thought, language)
    if fences:
        for start, _end, body in fences:
            if body.strip():
                return _finish(body, _clean_thought(text[:start]), language)
        return InvalidReply("the code block is empty", _clean_thought(text))
    return _bare_reply(text, language)


def _finish(body: str, thought: str | None, language: str | None) -> ParseResult:
    action = _tidy(body)
    if not action:
        return InvalidReply("the action is empty", thought)
    action = _unwrap_inline_code(action)
    submit = _submit_argument(action, language)
    if submit is not None:
        return ParsedAction("submit" if not submit else f"submit {submit}", thought, submit)
    return ParsedAction(action, thought)


def _bare_reply(text: str, language: str | None) -> ParseResult:
    thought_label = _THOUGHT.search(text)
    if thought_label is not None:
        return InvalidReply("the reply has a Thought but no Action", _clean_thought(text))
    body = _tidy(text)
    lines = body.splitlines()
    first = lines[0]
    if _SUBMIT.match(first.strip()):
        return _finish(first, None, language)
    if len(lines) == 1 and not _looks_like_prose(first):
        return _finish(body, None, language)
    pattern = _CODE_STARTS.get(language or "")
    if pattern is not None and pattern.match(first):
        return _finish(body, None, language)
    return InvalidReply("the reply has no code block, no `Action:` line and no one-line command")


def _fence_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, body) of each fenced block; an unclosed fence runs to the end of the text."""
    spans: list[tuple[int, int, str]] = []
    pos = 0
    while (start := text.find(FENCE, pos)) != -1:
        line_end = text.find("\n", start)
        same_line_close = text.find(FENCE, start + 3, line_end if line_end != -1 else len(text))
        if same_line_close != -1:  # ```ls -la``` on one line
            end = same_line_close + 3
            spans.append((start, end, text[start + 3 : same_line_close]))
            pos = end
            continue
        if line_end == -1:
            spans.append((start, len(text), text[start + 3 :]))
            break
        info = text[start + 3 : line_end].strip()
        close = text.find(FENCE, line_end + 1)
        inner = text[line_end + 1 : close if close != -1 else len(text)]
        is_tag = info.lower() in _LANGUAGE_TAGS or (_FENCE_TAG.match(info) and inner.strip())
        if info and not is_tag:
            inner = info + "\n" + inner  # not a language tag: the first line is code
        end = close + 3 if close != -1 else len(text)
        spans.append((start, end, inner))
        pos = end
    return spans


def _first_outside(
    pattern: re.Pattern[str], text: str, fences: list[tuple[int, int, str]], start: int = 0
) -> re.Match[str] | None:
    for match in pattern.finditer(text, start):
        if not any(s <= match.start() < e for s, e, _ in fences):
            return match
    return None


def _action_after_label(text: str, pos: int, fences: list[tuple[int, int, str]]) -> str | None:
    stop = len(text)
    for pattern in (_OBSERVATION, _THOUGHT, _ACTION):
        match = _first_outside(pattern, text, fences, pos)
        if match is not None:
            stop = min(stop, match.start())
    for start, _end, body in fences:
        if pos <= start < stop:
            return body  # the first code block after the label
    rest = text[pos:stop]
    if rest[:1] not in ("\n", "") and "\n\n" in rest.strip("\n"):
        rest = rest.strip("\n").split("\n\n", 1)[0]  # `Action: cmd` then a blank line and prose
    return rest if rest.strip() else None


def _tidy(body: str) -> str:
    """Drop blank lines around the code and trailing spaces; remove only a common indentation."""
    lines = body.split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return textwrap.dedent("\n".join(lines)).rstrip()


def _unwrap_inline_code(action: str) -> str:
    if "\n" not in action and len(action) >= 2 and action[0] == action[-1] == "`" and action.count("`") == 2:
        return action[1:-1].strip()
    return action


def _submit_argument(action: str, language: str | None) -> str | None:
    first, _, _rest = action.strip().partition("\n")
    match = _SUBMIT.match(first.strip())
    if match is None:
        return None
    argument = _strip_quotes(match.group(1))
    if language == "python" and (call := _IDENTIFIER_CALL.match(argument)):
        argument = call.group(1)
    return argument


def _strip_quotes(argument: str) -> str:
    argument = argument.strip()
    while len(argument) >= 2 and argument[0] in _QUOTES and argument[-1] == argument[0]:
        argument = argument[1:-1].strip()
    for quote in _QUOTES:  # a stray, unbalanced quote at either end
        if argument.count(quote) % 2 == 1:
            if argument.endswith(quote):
                argument = argument[:-1].rstrip()
            elif argument.startswith(quote):
                argument = argument[1:].lstrip()
    return argument


def _clean_thought(text: str) -> str | None:
    thought = _THOUGHT.sub("", text, count=1).strip()
    return thought or None


def _looks_like_prose(line: str) -> bool:
    words = line.split()
    if len(words) < 3 or line.rstrip()[-1:] not in ".!?:":
        return False
    return bool(_PROSE_START.match(line.strip())) and words[0].lower() not in _SQL_KEYWORDS


_PLAN_STEP = re.compile(r"^\s*(?:step\s*)?\d+\s*[.):]\s+(.+?)\s*$", re.IGNORECASE | re.MULTILINE)
_BULLET = re.compile(r"^\s*[-*•]\s+(.+?)\s*$", re.MULTILINE)


def parse_plan(text: str) -> list[str]:
    """The steps of a numbered (or else bulleted) plan, in order; empty when there is no list."""
    steps = _PLAN_STEP.findall(text) or _BULLET.findall(text)
    return [step.strip("*_ ") for step in steps if step.strip("*_ ")]

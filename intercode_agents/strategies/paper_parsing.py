"""How the InterCode paper's ReAct and Plan & Solve loops read a model's reply, quirks included.

A run meant to compare with the paper's Table 4 must turn the same reply into the same action, so
these functions reproduce the behaviour of the original's ``experiments/`` code (princeton-nlp/intercode
at commit c3e46d82: ``eval_react.py``, ``eval_plan_solve.py``, the parsers of ``utils/utils.py``),
written anew from what it does. Each returns what the original passed on: the text, and whether it was
code (a reply without code was shown a message and never ran). docs/FIDELITY.md lists the quirks.

ReAct (a completion model continued a text ending in ``Thought N:``):

- the reply stops where the original's stop sequence ``\\nObservation N:`` stopped it; stripped, it
  must split at ``\\nAction N: `` into exactly a thought and an action, else the loop asks again for
  the action alone (the thought is then the reply's first line, the action the second reply's);
- the action ``submit`` (exactly) submits; otherwise the code is the text from the first ``execute[``
  to the last ``]`` (SQL: up to the first ``;``); anything else is no code.

Plan & Solve (a chat model):

- the plan's steps are the texts after each ``<digits>. ``, up to the next such number or the end,
  wherever they occur (a number inside a sentence starts a step too);
- SQL: ``\\_`` becomes ``_``; a reply without a fence starting ``SQL: `` gives its first character
  after the label (sic), else the text from the first of SHOW, SELECT, DESCRIBE, DESC it holds; in a
  fence, the first block, its white space collapsed, is code when its first word is one of those.
  The text is cut at the first ``;``. Anything else is no code;
- Bash: line breaks become spaces; without a fence, a ``bash: `` prefix or the text after
  ``command:`` is the code; else the first fenced block of the *lower-cased* reply (``awk -F`` ran
  as ``awk -f``), its white space collapsed; without one, the whole reply. Every Bash reply is code;
- the paper's Bash fs_1 run ran every reply as written, fences and prose included (``as_written``).
"""

from __future__ import annotations

import re

FENCE = "```"
SQL_KEYWORDS = ("SHOW", "SELECT", "DESCRIBE", "DESC")
_EXECUTE = re.compile(r"execute\[(.*)\]", re.DOTALL)
_PLAN_STEP = re.compile(r"\d+\.\s(.*?)(?=\s\d+\.|\Z)", re.DOTALL)
_SQL_BLOCK = re.compile(r"```(?:sql|SQL)?([\S\s]+?)```")
_BASH_BLOCK = re.compile(r"```(?:bash|sh)?([\S\s]+?)```")  # read in lower-cased text


# -- ReAct ----------------------------------------------------------------------------------------
def react_split(reply: str, turn: int) -> tuple[str, str | None]:
    """(thought, action) of a ReAct reply at ``turn``; the action is None when the reply does not
    split into exactly two parts (the thought is then the reply's first line)."""
    text = reply.split(f"\nObservation {turn}:", 1)[0].strip()
    parts = text.split(f"\nAction {turn}: ")
    if len(parts) == 2:
        return parts[0], parts[1]
    return text.split("\n", 1)[0], None


def retry_action(reply: str) -> str:
    """The action of the second call: its first line (the original stopped at a line break)."""
    return reply.split("\n", 1)[0].strip()


def react_code(action: str, env_name: str) -> tuple[str, bool]:
    """What the original's ReAct loop ran for ``action``: (``submit`` or the code, True), or
    (``action``, False) when it held no code."""
    if action == "submit":
        return action, True
    match = _EXECUTE.search(action)
    if match is None:
        return action, False
    code = match.group(1)
    return (_to_semicolon(code) if env_name == "sql" else code), True


# -- Plan & Solve ---------------------------------------------------------------------------------
def plan_steps(plan: str) -> list[str]:
    """The steps of a plan reply, as the original split it."""
    return _PLAN_STEP.findall(plan)


def step_code(reply: str, env_name: str, *, as_written: bool = False) -> tuple[str, bool]:
    """What the original's Plan & Solve loop ran for a step's reply: (code, True), or (text, False)
    when it held no code (the text is then what the original logged)."""
    if as_written:
        return reply, True
    return _sql_step(reply) if env_name == "sql" else _bash_step(reply)


def _sql_step(reply: str) -> tuple[str, bool]:
    text = reply.replace("\\_", "_")
    if FENCE not in text:
        if text.startswith("SQL: "):
            return _to_semicolon(text[len("SQL: ")]), True  # sic: one character
        for keyword in SQL_KEYWORDS:
            if keyword in text:
                return _to_semicolon(text[text.index(keyword) :]), True
    block = _SQL_BLOCK.search(text)
    if block is None:
        return text, False
    code = _to_semicolon(" ".join(block.group(1).split()))
    words = code.split()
    return code, bool(words) and words[0].upper() in SQL_KEYWORDS


def _bash_step(reply: str) -> tuple[str, bool]:
    text = reply.replace("\n", " ")
    lowered = text.lower()
    if FENCE not in text:
        if lowered.startswith("bash: "):
            return text[len("bash: ") :], True
        if "command:" in lowered:  # the original looked for it in the unlowered text, and crashed
            return text[lowered.index("command:") + len("command:") :], True
    block = _BASH_BLOCK.search(lowered)
    if block is None:
        return text, True
    return " ".join(block.group(1).split()), True


def _to_semicolon(text: str) -> str:
    return text.split(";", 1)[0]

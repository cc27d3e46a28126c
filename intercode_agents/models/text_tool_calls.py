"""Recover tool calls that a small model wrote as text instead of native tool calls.

Small models often answer a tools request with ``{"name": ..., "arguments": {...}}`` inside a fenced
code block, inside ``<tool_call>`` tags, or as bare JSON. Such text becomes proper
``AIMessage.tool_calls``, but only for names of tools that were bound; anything else stays text.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Collection
from typing import Any

from langchain_core.messages import ToolCall

_FENCED = re.compile(r"```[ \t]*[\w.+-]*[ \t]*\n(.*?)\n?[ \t]*```", re.DOTALL)
_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)
_NAME_KEYS = ("name", "tool", "tool_name")
_ARG_KEYS = ("arguments", "parameters", "args", "input")


def parse_text_tool_calls(text: str, tool_names: Collection[str]) -> tuple[str, list[ToolCall]]:
    """Return ``(remaining_text, tool_calls)``; with no match, ``(text, [])`` unchanged."""
    if not tool_names or not text.strip():
        return text, []
    calls: list[ToolCall] = []
    remaining = text
    for pattern in (_TAGGED, _FENCED):
        remaining = pattern.sub(lambda m: _take(m.group(1), m.group(0), tool_names, calls), remaining)
    if not calls:
        remaining = _take_bare_json(remaining, tool_names, calls)
    if not calls:
        return text, []
    return remaining.strip(), calls


def _take(body: str, whole: str, tool_names: Collection[str], calls: list[ToolCall]) -> str:
    """Append the calls in ``body`` and return "" to cut the block out, or ``whole`` to keep it."""
    try:
        found = _calls_from_json(json.loads(body), tool_names)
    except json.JSONDecodeError:
        return whole
    if not found:
        return whole
    calls.extend(found)
    return ""


def _take_bare_json(text: str, tool_names: Collection[str], calls: list[ToolCall]) -> str:
    decoder = json.JSONDecoder()
    kept: list[str] = []
    pos = 0
    start = _next_json_start(text, 0)
    while start != -1:
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            start = _next_json_start(text, start + 1)
            continue
        found = _calls_from_json(value, tool_names)
        if found:
            calls.extend(found)
            kept.append(text[pos:start])
            pos = end
        start = _next_json_start(text, end)  # never look inside a decoded value
    kept.append(text[pos:])
    return "".join(kept)


def _next_json_start(text: str, pos: int) -> int:
    candidates = [i for i in (text.find("{", pos), text.find("[", pos)) if i != -1]
    return min(candidates, default=-1)


def _calls_from_json(value: Any, tool_names: Collection[str]) -> list[ToolCall]:
    """One call object or a list of them; all must name bound tools, else nothing is taken."""
    items = value if isinstance(value, list) else [value]
    calls = [_call_from_object(item, tool_names) for item in items]
    if not items or any(call is None for call in calls):
        return []
    return [call for call in calls if call is not None]


def _call_from_object(obj: Any, tool_names: Collection[str]) -> ToolCall | None:
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("function"), dict):  # OpenAI shape: {"type": "function", "function": {...}}
        obj = obj["function"]
    name: str | None = next((obj[key] for key in _NAME_KEYS if isinstance(obj.get(key), str)), None)
    if name is None or name not in tool_names:
        return None
    arg_key = next((key for key in _ARG_KEYS if key in obj), None)
    if arg_key is None:
        if set(obj) - {"name", "tool", "tool_name", "type", "id"}:
            return None
        args: Any = {}
    else:
        args = obj[arg_key]
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError:
            return None
    if not isinstance(args, dict):
        return None
    return ToolCall(name=name, args=args, id=f"call_{uuid.uuid4().hex[:24]}", type="tool_call")

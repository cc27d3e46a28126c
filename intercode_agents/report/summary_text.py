"""Plain-text pieces of a summary that the terminal table and the report share: the denominator, the
excluded episodes by reason, and the records that were not counted."""

from __future__ import annotations

from typing import Any

from intercode_agents.metrics.summary import EXCLUSION_REASONS


def denominator_text(summary: dict[str, Any]) -> str:
    """``8 planned = 5 scored + 2 excluded + 1 not run`` (``recorded`` when the plan is unknown)."""
    d = summary["denominator"]
    total = f"{d['planned']} planned" if d["planned"] is not None else f"{d['recorded']} recorded"
    text = f"{total} = {d['scored']} scored + {d['excluded']} excluded"
    return text + (f" + {d['not_run']} not run" if d["not_run"] is not None else "")


def episode_name(entry: dict[str, Any]) -> str:
    """A task id, with its epoch when a run has several."""
    epoch = entry.get("epoch")
    return str(entry["task_id"]) + (f" (epoch {epoch})" if epoch not in (None, 1) else "")


def excluded_by_reason(summary: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]]]]:
    """(reason in words, its excluded episodes) for every reason that occurs, in a fixed order."""
    episodes = summary["excluded"]["episodes"]
    groups = [
        (words, [e for e in episodes if e["reason"] == reason]) for reason, words in EXCLUSION_REASONS.items()
    ]
    return [(words, mine) for words, mine in groups if mine]


def excluded_names(entries: list[dict[str, Any]]) -> str:
    return ", ".join(
        episode_name(e) + (f" [{e['attempts']} attempts]" if e["attempts"] > 1 else "") for e in entries
    )


def ignored_where(record: dict[str, Any]) -> str:
    """Where a record that is not counted sits: ``line 7 (bash/fs1/3)``."""
    return f"line {record['line']}" + (f" ({record['task_id']})" if record.get("task_id") else "")


def ignored_text(record: dict[str, Any]) -> str:
    return f"{ignored_where(record)}: {record['why']}"

"""The terminal view of a re-score: one summary table for all files, then each file's flips, the
entries left out and why, and its worst turns.

Everything a log holds is shown as text, never as markup (a ``[/]`` or ``[aeiou]`` in an action is
printed as it is), and its control characters (escape sequences, carriage returns, bells) and text
that is not valid Unicode are shown escaped, so a log cannot drive the terminal.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from rich import box
from rich.console import Group
from rich.table import Column, Table
from rich.text import Text

from intercode_agents.fidelity.paper_log import SHAPE_NAMES
from intercode_agents.fidelity.rescore import EpisodeScore, FileReport, TurnScore

# Reward parts that say why a turn scored what it did (the rest are counts behind them).
_REASON_PARTS = (
    "missing_paths",  # Bash
    "extra_paths",
    "wrong_content_paths",
    "answer_similarity",
    "gold_failed",
    "agent_rows",  # SQL
    "gold_rows",
    "iou",
    "tau",
    "same_as_gold",  # Python
    "passed",
    "tests",
    "error",
)
# C0 and C1 controls, DEL, lone surrogates, and the format characters that reorder or hide text.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def plain(text: str) -> str:
    """``text`` with every character that could act on a terminal written as an escape (``\\x1b``)."""
    return _UNSAFE.sub(_escaped, text)


def _clip(text: str | None, width: int = 70) -> str:
    if text is None:
        return "–"
    flat = plain(text.replace("\n", "⏎"))
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _telling(value: object) -> bool:
    return value is not None and value is not False and value != ""


def reason(turn: TurnScore) -> str:
    """Why our reward is what it is: the telling reward parts, and whether the output matched the log's."""
    shown = [f"{k}={turn.parts[k]}" for k in _REASON_PARTS if _telling(turn.parts.get(k))]
    same = turn.same_observation
    if same is False:
        shown.insert(0, f"output differs (log: '{_clip(turn.logged_observation, 40)}')")
    elif same is True:
        shown.insert(0, "same output")
    return plain("; ".join(shown))


def _ids(episodes: Sequence[EpisodeScore]) -> str:
    return " ".join(e.task_id for e in episodes) or "none"


def _summary(reports: Sequence[FileReport]) -> Table:
    right = {"no_wrap": True, "justify": "right"}
    headers = ("n", "out", "log", "ours", "Δ", "+", "−", "turns ≠")
    table = Table(
        Column("#", min_width=1, **right),  # type: ignore[arg-type]
        Column("env", no_wrap=True),
        Column("loop", no_wrap=True),
        Column("exec", no_wrap=True),
        *(Column(h, **right) for h in headers),  # type: ignore[arg-type]
        box=box.SIMPLE_HEAD,
        title="Re-scored InterCode logs: n episodes compared, out: entries left out of both sides (listed "
        "below); log and ours: % solved (a turn reached reward 1); Δ in points; + and −: episodes solved "
        "only here, only in the log; turns ≠: scored turns whose reward differs",
        title_justify="left",
    )
    for number, r in enumerate(reports, start=1):
        table.add_row(
            str(number),
            f"{r.env}/{r.split}",
            SHAPE_NAMES[r.shape],
            r.execution,
            str(len(r.episodes)),
            str(len(r.left_out)),
            f"{100 * r.logged_rate:.2f}",
            f"{100 * r.our_rate:.2f}",
            f"{r.difference_points:+.2f}",
            str(len(r.gained)),
            str(len(r.lost)),
            f"{len(r.disagreements())} of {r.scored_turns}",
        )
    return table


def _worst(number: int, report: FileReport, worst: int) -> Table:
    table = Table(
        "task",
        "turn",
        "action",
        "log",
        "ours",
        "why (our reward parts)",
        box=box.SIMPLE_HEAD,
        title=f"#{number}: the turns that disagree most",
        title_justify="left",
    )
    for episode, turn in report.disagreements()[:worst]:
        table.add_row(
            Text(episode.task_id),
            Text(str(turn.turn)),
            Text(_clip(turn.action, 50)),
            Text(f"{turn.logged:g}"),
            Text(f"{turn.ours:g}" if turn.ours is not None else "–"),
            Text(reason(turn)),
        )
    return table


def rescore_view(reports: Sequence[FileReport], worst: int = 10) -> Group:
    """The summary table (one row per file), then per file its flips, what it left out, its worst turns."""
    parts: list[Any] = [_summary(reports)]
    for number, r in enumerate(reports, start=1):
        parts.append(
            Text(
                plain(f"#{number} {r.path}: gained {_ids(r.gained)}; lost {_ids(r.lost)} ({r.wall_s:.1f} s)")
            )
        )
        for quirk in r.quirks:
            parts.append(Text(plain(f"  {quirk}"), style="cyan"))
        for out in r.left_out:
            who = out.task_id or f"entry {out.key}"
            parts.append(Text(plain(f"  left out {who} ({out.kind}): {out.reason}"), style="yellow"))
        if r.disagreements() and worst:
            parts.append(_worst(number, r, worst))
        for episode in r.errors:
            parts.append(Text(plain(f"{episode.task_id}: not replayed: {episode.error}"), style="red"))
    return Group(*parts)

"""The terminal view of a re-score: one summary table for all files, then each file's worst turns."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from intercode_agents.runner.rescore import EpisodeScore, FileReport, TurnScore

# Reward parts that say why a turn scored what it did (the rest are counts behind them).
_REASON_PARTS = (
    "missing_paths",
    "extra_paths",
    "wrong_content_paths",
    "answer_similarity",
    "gold_failed",
    "same_as_gold",
    "passed",
    "tests",
    "error",
)


def _clip(text: str | None, width: int = 70) -> str:
    if text is None:
        return "–"
    flat = text.replace("\n", "⏎")
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def reason(turn: TurnScore) -> str:
    """Why our reward is what it is: the telling reward parts, and whether the output matched the log's."""
    shown = [f"{k}={turn.parts[k]}" for k in _REASON_PARTS if turn.parts.get(k) not in (None, "", False)]
    same = turn.same_observation
    if same is False:
        shown.insert(0, f"output differs (log: {_clip(turn.logged_observation, 40)!r})")
    elif same is True:
        shown.insert(0, "same output")
    return "; ".join(shown)


def _ids(episodes: Sequence[EpisodeScore]) -> str:
    return " ".join(e.task_id.rsplit("/", 1)[-1] for e in episodes) or "–"


def rescore_view(reports: Sequence[FileReport], worst: int = 10) -> Group:
    summary = Table(
        "file",
        "env",
        "execution",
        "episodes",
        "log",
        "ours",
        "Δ points",
        "gained",
        "lost",
        "turns differing",
        title="Re-scored InterCode logs (success rate: a turn reached reward 1)",
        title_justify="left",
    )
    for r in reports:
        scored = sum(t.ours is not None for e in r.episodes for t in e.turns)
        summary.add_row(
            r.path.name,
            f"{r.env}/{r.split}",
            r.execution,
            str(len(r.episodes)),
            f"{100 * r.logged_rate:.2f}%",
            f"{100 * r.our_rate:.2f}%",
            f"{r.difference_points:+.2f}",
            str(len(r.gained)),
            str(len(r.lost)),
            f"{len(r.disagreements())} of {scored}",
        )
    parts: list[Any] = [summary]
    for r in reports:
        parts.append(Text(f"{r.path.name}: gained {_ids(r.gained)}; lost {_ids(r.lost)}  ({r.wall_s:.1f} s)"))
        if r.disagreements():
            table = Table(
                "task",
                "turn",
                "action",
                "log",
                "ours",
                "why (our reward parts)",
                title=f"Worst disagreements in {r.path.name}",
                title_justify="left",
            )
            for episode, turn in r.disagreements()[:worst]:
                table.add_row(
                    episode.task_id,
                    str(turn.turn),
                    _clip(turn.action, 50),
                    f"{turn.logged:g}",
                    f"{turn.ours:g}" if turn.ours is not None else "–",
                    reason(turn),
                )
            parts.append(table)
        for episode in r.errors:
            parts.append(Text(f"{episode.task_id}: not replayed: {episode.error}", style="red"))
    return Group(*parts)

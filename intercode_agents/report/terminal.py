"""Terminal views of runs: the summary table, the gold report and the replay report."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from intercode_agents.report.summary_text import (
    denominator_text,
    excluded_by_reason,
    excluded_names,
    ignored_text,
)
from intercode_agents.runner.gold import GoldReport, GoldResult
from intercode_agents.runner.replay import ReplayReport

PARTS_SHOWN = 6  # reward parts per failed task in the gold table


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _num(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _excluded_rows(summary: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (f"excluded: {words}", f"{len(entries)}: {excluded_names(entries)}")
        for words, entries in excluded_by_reason(summary)
    ]


def _ignored_rows(summary: dict[str, Any]) -> list[tuple[str, str]]:
    ignored = summary.get("ignored_records") or []
    if not ignored:
        return []
    return [("records not counted", f"{len(ignored)}: " + "; ".join(ignored_text(r) for r in ignored))]


def _epoch_rows(summary: dict[str, Any]) -> list[tuple[str, str]]:
    """pass@k, mean@k and the spread, for runs of several samples per task."""
    block = summary.get("epochs") or {}
    if (block.get("k") or 1) <= 1:
        return []
    passes = ", ".join(f"pass@{k} {_pct(v['value'])}" for k, v in block["pass_at_k"].items())
    spread = block["spread"]
    return [
        (f"pass@k ({block['tasks']} tasks)", passes),
        (
            "mean@k success / reward",
            f"{_pct(block['mean_at_k']['success'])} / {_num(block['mean_at_k']['reward'], 3)}",
        ),
        (
            "tasks solved always / sometimes / never",
            f"{spread['always_solved']} / {spread['sometimes_solved']} / {spread['never_solved']} "
            f"(mean reward spread {_num(spread['mean_reward_std'], 3)})",
        ),
    ]


def summary_table(summary: dict[str, Any], *, wall_s: float | None = None, new: int | None = None) -> Table:
    """The headline metrics of ``summary.json`` as a two-column table, with the success rate's
    denominator and every episode left out of it."""
    outcomes = summary["outcomes"]
    tokens, cost = summary["tokens"], summary["cost"]
    table = Table(title="Run summary", show_header=False, title_justify="left")
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    retried = summary["retried"]
    rows = [
        ("episodes", denominator_text(summary)),
        ("solved", str(summary["n_solved"])),
        (
            "success rate",
            f"{_pct(summary['success_rate'])} ({summary['n_solved']} of {summary['n_scored']} scored)",
        ),
        *_excluded_rows(summary),
        *_ignored_rows(summary),
        ("mean reward", _num(summary["mean_reward"], 3)),
        (
            "first pass / recovery",
            f"{_pct(summary['first_pass']['rate'])} / {_pct(summary['recovery']['rate'])}",
        ),
        ("mean turns (budget)", f"{_num(summary['mean_turns'])} ({summary['turn_budget']})"),
        ("errored actions", _pct(summary["error_rate"])),
        ("outcomes", ", ".join(f"{k} {v}" for k, v in outcomes.items() if v) or "none"),
        (
            "retried (env/model errors)",
            f"{retried['episodes']} episodes, {retried['failed_attempts']} failed attempts",
        ),
        ("tokens in / out", f"{tokens['input']:,} / {tokens['output']:,}"),
        ("cost (USD)", "unknown" if cost["total_usd"] is None else f"{cost['total_usd']:.4f}"),
    ]
    rows += _epoch_rows(summary)
    if summary.get("stopped"):
        rows.append(("stopped", summary["stopped"]))
    if wall_s is not None and new is not None:
        per_min = 60 * new / wall_s if wall_s > 0 else 0.0
        rows.append(("this session", f"{new} episodes in {wall_s:.1f} s ({per_min:.1f}/min)"))
    for key, value in rows:
        table.add_row(key, value)
    return table


def _parts(result: GoldResult) -> str:
    shown = [(k, v) for k, v in result.parts.items() if v not in ("", None, False, 0)][:PARTS_SHOWN]
    text = ", ".join(f"{k}={v}" for k, v in shown)
    return f"{result.error}  {text}".strip() if result.error else text


def gold_view(report: GoldReport) -> Group:
    parts: list[Any] = []
    if report.failed or report.corrupt:
        table = Table("task", "reward", "status", "parts / error", title="Tasks whose gold did not score 1")
        for result, status in [
            *((r, "[red]failed[/]") for r in report.failed),
            *((r, "corrupt") for r in report.corrupt),
        ]:
            reward = "–" if result.reward is None else f"{result.reward:g}"
            table.add_row(
                result.task_id,
                reward,
                status if result.outcome != "env_error" else "[red]env_error[/]",
                _parts(result),
            )
        parts.append(table)
    if report.solved:
        ids = " ".join(f"{r.task_id}={r.reward:g}" for r in report.solved if r.reward is not None)
        parts.append(Text(f"solved ({len(report.solved)}): {ids}", style="green"))
    verdict = "[bold green]all gold solved[/]" if report.ok else f"[bold red]{len(report.failed)} failed[/]"
    parts.append(
        Text.from_markup(
            f"{report.env} ({report.reward_mode}): {report.total} tasks, {len(report.solved)} solved, "
            f"{len(report.failed)} failed, {len(report.corrupt)} corrupt; {verdict}; "
            f"{report.episodes_per_s:.2f} episodes/s "
            f"({report.wall_s:.1f} s at concurrency {report.concurrency})"
        )
    )
    return Group(*parts)


def replay_view(report: ReplayReport) -> Group:
    parts: list[Any] = []
    if report.changed:
        table = Table(
            "task", "env", "seed", "recorded", "replayed", "replayed parts", title="Rewards that changed"
        )
        for e in report.changed:
            shown = ", ".join(f"{k}={v}" for k, v in e.replayed_parts.items() if v not in ("", None))
            table.add_row(
                e.task_id, e.env, str(e.seed), _num(e.recorded, 3), _num(e.replayed, 3), e.error or shown
            )
        parts.append(table)
    for task_id, why in report.skipped:
        parts.append(Text(f"skipped {task_id}: {why}", style="yellow"))
    same = len(report.episodes) - len(report.changed)
    style = "bold red" if report.changed else "bold green"
    parts.append(
        Text(
            f"{len(report.episodes)} episodes replayed in {report.wall_s:.1f} s: {same} reproduced, "
            f"{len(report.changed)} changed, {len(report.skipped)} skipped",
            style=style,
        )
    )
    return Group(*parts)

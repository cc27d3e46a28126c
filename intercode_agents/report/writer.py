"""A static report of one or more run directories: one self-contained HTML file plus a Markdown summary.

The HTML needs no server and no network (no external URL; a content security policy allows nothing
but its own inline style and script): charts are inline SVG drawn here, and a small script of its
own (``report_app.js``) gives the per-episode view (question, every step with its thought, action,
observation, exit code and reward, the reward parts, tags, tokens and cost), filters by outcome,
tag, group and task id, and the run-vs-run comparison of flipped episodes. The episodes travel as
data (:mod:`.episodes`) and only the rows in view are rendered, so 10,000 episodes stay fast.
Several run directories are compared side by side, one line or bar per run, labelled by strategy and
model. Everything taken from the records is HTML-escaped in the markup, Markdown-escaped in the
summary, and put into the page as text by the script.

Reading a run directory: ``trajectories.jsonl`` against the plan of its ``run.json`` by the rules of
:mod:`.run_records`, exactly as a resume counts them (lines that are no record, duplicates and
foreign records are listed and not counted; a retry of a recorded error replaces it). The metrics
are always computed from those records (:func:`metrics.summarize`, with the run's turn budget and
planned episode count), never taken from ``summary.json``, so an edited or stale summary cannot
change a report. Every report shows each rate's denominator, every excluded episode with its reason
and every record that was not counted.

Command line: ``python -m intercode_agents.report.writer RUN_DIR... [-o OUT]``.
"""

from __future__ import annotations

import argparse
import html
import math
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from string import Template
from typing import Any

from intercode_agents.errors import ConfigError
from intercode_agents.metrics.failure_modes import FAILURE_TAGS
from intercode_agents.metrics.summary import EXCLUSION_REASONS
from intercode_agents.report.episodes import flips, natural, page_data, page_json
from intercode_agents.report.runs import Run, label_runs, load_run
from intercode_agents.report.summary_text import (
    denominator_text,
    episode_name,
    excluded_by_reason,
    ignored_where,
)
from intercode_agents.trajectory import BUDGET_OUTCOMES

TEMPLATE = Path(__file__).with_name("template.html")
APP = Path(__file__).with_name("app.js")
CHART_WIDTH = 760
GROUP_ORDER = ("env", "fs", "hardness", "db", "tag")  # the paper's groups first, in its order
HARDNESS_ORDER = ("easy", "medium", "hard", "extra")  # Spider's levels
FLIPS_LISTED = 50  # flipped episodes listed per pair of runs in the Markdown summary


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


# ----------------------------------------------------------------------------- formatting


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _num(value: float | None, digits: int = 2) -> str:
    if value is None:
        return "n/a"
    return f"{value:,}" if isinstance(value, int) else f"{value:,.{digits}f}"


def _usd(value: float | None) -> str:
    if value is None:
        return "n/a"
    if value >= 1 or value == 0:
        return f"${value:,.2f}"
    return f"${value:.4f}" if value >= 0.01 else f"${value:.6f}"


def _short(text: str, limit: int = 26) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _headline_rows(run: Run, k_max: int = 1) -> list[tuple[str, str]]:
    s = run.summary
    outcomes, tokens, cost = s["outcomes"], s["tokens"], s["cost"]
    excluded = s["excluded"]["counts"]
    return [
        ("Episodes", denominator_text(s)),
        ("Scored (the denominator of every rate)", _num(s["n_scored"])),
        *(
            (f"Excluded: {words}", _num(excluded.get(reason, 0)))
            for reason, words in EXCLUSION_REASONS.items()
        ),
        ("Solved", _num(s["n_solved"])),
        ("Success rate", f"{_pct(s['success_rate'])} ({s['n_solved']} of {s['n_scored']} scored)"),
        ("Mean reward", _num(s["mean_reward"], 3)),
        ("First pass (solved on turn 1)", _pct(s["first_pass"]["rate"])),
        ("Recovery (solved on a later turn)", _pct(s["recovery"]["rate"])),
        ("Mean turns", _num(s["mean_turns"])),
        ("Error % (actions that failed to run)", _pct(s["error_rate"])),
        *((f"Outcome {name}", _num(outcomes.get(name, 0))) for name in ("failed", *BUDGET_OUTCOMES)),
        ("Tokens in / out", f"{_num(tokens['input'])} / {_num(tokens['output'])}"),
        (
            "Tokens per episode in / out",
            f"{_num(tokens['input_per_episode'], 0)} / {_num(tokens['output_per_episode'], 0)}",
        ),
        ("Cost (USD, prices as of " + str(cost.get("prices_as_of")) + ")", _usd(cost["total_usd"])),
        ("Cost per solved task", _usd(cost["per_solved_usd"])),
        *_safeguard_rows(s),
        (
            "Retried (env/model errors)",
            f"{s['retried']['episodes']} episodes, {s['retried']['failed_attempts']} failed attempts",
        ),
        ("Recorded errors replaced by a retry", _num(run.superseded)),
        ("Records not counted (see below)", _num(len(run.ignored))),
        *_epoch_rows(s, k_max),
    ]


def _safeguard_rows(summary: dict[str, Any]) -> list[tuple[str, str]]:
    """The guarded-agent comparison's columns (:mod:`.safeguard_metrics`); runs older than them have none."""
    if "error_recovery" not in summary:
        return []
    recovery, mutation, guards = (
        summary["error_recovery"],
        summary["destructive_mutation"],
        summary["safeguards"],
    )
    return [
        ("Completion", _pct(summary["completion"]["rate"])),
        (
            f"Recovery within {recovery['within_turns']} turns of an error",
            f"{_pct(recovery['rate'])} ({recovery['recovered']} of {recovery['episodes_with_error']})",
        ),
        (
            "Destructive mutation, read from the files (destroyed; still at the end)",
            f"{_pct(mutation['rate'])}; {_pct(mutation['left_rate'])} "
            f"(of {mutation['measured_episodes']} measured)",
        ),
        (
            "Safeguards: refusals / checkpoints / rollbacks / vetoes",
            f"{guards['refusals']} / {guards['checkpoints']} / {guards['rollbacks']} / {guards['vetoes']}",
        ),
    ]


def _most_epochs(runs: list[Run]) -> int:
    return max(run.summary["epochs"]["k"] for run in runs)


def _epoch_rows(summary: dict[str, Any], k_max: int) -> list[tuple[str, str]]:
    """Rows for pass@1 .. pass@k_max (the most epochs of the runs compared), mean@k and the spread."""
    block = summary["epochs"]
    rows = []
    for k in range(1, k_max + 1):
        entry = block["pass_at_k"].get(str(k))
        value = "n/a" if entry is None else f"{_pct(entry['value'])} ({entry['tasks']} tasks)"
        rows.append((f"pass@{k} (unbiased estimator)", value))
    spread = block["spread"]
    return [
        ("Samples per task (epochs)", str(block["k"])),
        *rows,
        (
            "mean@k success / reward",
            f"{_pct(block['mean_at_k']['success'])} / {_num(block['mean_at_k']['reward'], 3)}",
        ),
        (
            "Tasks solved always / sometimes / never",
            f"{spread['always_solved']} / {spread['sometimes_solved']} / {spread['never_solved']}",
        ),
        ("Mean per-task reward spread (std)", _num(spread["mean_reward_std"], 3)),
    ]


# ----------------------------------------------------------------------------------- charts


def _svg(height: int, body: list[str], label: str) -> str:
    return (
        f'<svg class="chart" role="img" aria-label="{_e(label)}" width="{CHART_WIDTH}" height="{height}" '
        f'viewBox="0 0 {CHART_WIDTH} {height}">{"".join(body)}</svg>'
    )


def _series_open(i: int, run: Run, values: Sequence[float | None]) -> str:
    data = ",".join("" if v is None else f"{v:.4f}" for v in values)
    return f'<g class="series" data-run="{i}" data-label="{_e(run.label)}" data-values="{data}">'


def _legend(runs: list[Run]) -> str:
    items = "".join(f'<li><span style="background:{r.color}"></span>{_e(r.label)}</li>' for r in runs)
    return f'<ul class="legend">{items}</ul>'


def _line_chart(runs: list[Run], curves: list[list[float | None]], label: str) -> str:
    left, right, top, bottom, height = 64, 20, 12, 40, 320
    width, plot_h = CHART_WIDTH - left - right, height - top - bottom
    x_max = max((len(c) for c in curves), default=1)

    def x(k: int) -> float:
        return left + (k - 1) / (x_max - 1) * width if x_max > 1 else left + width / 2

    def y(rate: float) -> float:
        return top + (1 - rate) * plot_h

    body = []
    for tick in range(0, 101, 20):
        gy = y(tick / 100)
        body.append(
            f'<line class="grid" x1="{left}" x2="{left + width}" y1="{gy:.1f}" y2="{gy:.1f}"/>'
            f'<text x="{left - 6}" y="{gy + 4:.1f}" text-anchor="end">{tick}%</text>'
        )
    step = math.ceil(x_max / 15)
    for k in range(1, x_max + 1, step):
        body.append(f'<text x="{x(k):.1f}" y="{top + plot_h + 16}" text-anchor="middle">{k}</text>')
    body.append(
        f'<line class="axis" x1="{left}" x2="{left}" y1="{top}" y2="{top + plot_h}"/>'
        f'<text x="{left + width / 2:.1f}" y="{height - 6}" text-anchor="middle">turn budget k</text>'
        f'<text transform="translate(14 {top + plot_h / 2:.1f}) rotate(-90)" text-anchor="middle">'
        "success rate</text>"
    )
    for i, (run, curve) in enumerate(zip(runs, curves, strict=True)):
        points = [(k, r) for k, r in enumerate(curve, 1) if r is not None]
        body.append(_series_open(i, run, curve))
        path = " ".join(f"{x(k):.1f},{y(r):.1f}" for k, r in points)
        body.append(f'<polyline points="{path}" fill="none" stroke="{run.color}" stroke-width="2"/>')
        body.extend(
            f'<circle cx="{x(k):.1f}" cy="{y(r):.1f}" r="3" fill="{run.color}">'
            f"<title>{_e(run.label)}: {_pct(r)} solved within {k} turns</title></circle>"
            for k, r in points
        )
        body.append("</g>")
    return _svg(height, body, label)


def _bar_chart(categories: list[str], runs: list[Run], values: list[list[float | None]], label: str) -> str:
    """Horizontal grouped bars of shares (0..1): one row per category, one bar per run."""
    label_w, value_w, top, bar_h, gap = 180, 56, 8, 14, 10
    plot_w = CHART_WIDTH - label_w - value_w
    row_h = len(runs) * bar_h + gap
    height = top + len(categories) * row_h + 22
    body = []
    for tick in range(0, 101, 25):
        gx = label_w + plot_w * tick / 100
        body.append(
            f'<line class="grid" x1="{gx:.1f}" x2="{gx:.1f}" y1="{top}" y2="{height - 20}"/>'
            f'<text x="{gx:.1f}" y="{height - 6}" text-anchor="middle">{tick}%</text>'
        )
    for c, category in enumerate(categories):
        mid = top + c * row_h + len(runs) * bar_h / 2
        body.append(
            f'<text x="{label_w - 8}" y="{mid + 4:.1f}" text-anchor="end">{_e(_short(category))}'
            f"<title>{_e(category)}</title></text>"
        )
    for i, run in enumerate(runs):
        body.append(_series_open(i, run, values[i]))
        for c, (category, value) in enumerate(zip(categories, values[i], strict=True)):
            by = top + c * row_h + i * bar_h
            if value is None:
                body.append(f'<text x="{label_w + 4}" y="{by + bar_h - 3}" fill="#999">n/a</text>')
                continue
            bw = plot_w * value
            body.append(
                f'<rect x="{label_w}" y="{by}" width="{bw:.1f}" height="{bar_h - 2}" fill="{run.color}">'
                f"<title>{_e(run.label)} · {_e(category)}: {_pct(value)}</title></rect>"
                f'<text x="{label_w + bw + 4:.1f}" y="{by + bar_h - 3}">{_pct(value)}</text>'
            )
        body.append("</g>")
    return _svg(height, body, label)


def _column_chart(
    categories: list[str], runs: list[Run], values: list[list[float | None]], label: str
) -> str:
    """Vertical grouped bars of shares (0..1): one group per category, one bar per run."""
    left, top, bottom, height = 56, 12, 40, 260
    plot_w, plot_h = CHART_WIDTH - left - 20, height - top - bottom
    group_w = plot_w / max(len(categories), 1)
    bar_w = group_w * 0.8 / max(len(runs), 1)
    highest = max((v for row in values for v in row if v is not None), default=0.0)
    step = next((s for s in (0.01, 0.02, 0.05, 0.1, 0.2) if s * 6 >= highest), 0.25)
    ticks = max(1, math.ceil(highest / step - 1e-9))
    peak = step * ticks
    body = []
    for tick in range(ticks + 1):
        share = step * tick
        gy = top + plot_h * (1 - tick / ticks)
        body.append(
            f'<line class="grid" x1="{left}" x2="{left + plot_w}" y1="{gy:.1f}" y2="{gy:.1f}"/>'
            f'<text x="{left - 6}" y="{gy + 4:.1f}" text-anchor="end">{_pct(share)}</text>'
        )
    for c, category in enumerate(categories):
        cx = left + (c + 0.5) * group_w
        body.append(f'<text x="{cx:.1f}" y="{top + plot_h + 16}" text-anchor="middle">{_e(category)}</text>')
    body.append(f'<text x="{left + plot_w / 2:.1f}" y="{height - 6}" text-anchor="middle">turns used</text>')
    for i, run in enumerate(runs):
        body.append(_series_open(i, run, values[i]))
        for c, (category, value) in enumerate(zip(categories, values[i], strict=True)):
            if not value:
                continue
            bh = plot_h * value / peak
            bx = left + c * group_w + group_w * 0.1 + i * bar_w
            body.append(
                f'<rect x="{bx:.1f}" y="{top + plot_h - bh:.1f}" width="{bar_w:.1f}" height="{bh:.1f}" '
                f'fill="{run.color}"><title>{_e(run.label)} · {_e(category)} turns: {_pct(value)}</title>'
                "</rect>"
            )
        body.append("</g>")
    return _svg(height, body, label)


# ------------------------------------------------------------------------------ sections


def _curves(runs: list[Run]) -> list[list[float | None]]:
    return [[point["rate"] for point in run.summary["success_at_turns"]] for run in runs]


def _group_tables(runs: list[Run]) -> dict[str, dict[str, list[float | None]]]:
    """{group key: {value: [success rate per run]}}, with the env as a group when runs span several."""
    blocks = [dict(run.summary["by_group"]) for run in runs]
    if len({env for run in runs for env in run.summary["envs"]}) > 1:
        for block, run in zip(blocks, runs, strict=True):
            block["env"] = run.summary["by_env"]
    tables: dict[str, dict[str, list[float | None]]] = {}
    for key in sorted({k for block in blocks for k in block}, key=_group_order):
        values = sorted({v for block in blocks for v in block.get(key, {})}, key=_value_order)
        tables[key] = {
            v: [block.get(key, {}).get(v, {}).get("success_rate") for block in blocks] for v in values
        }
    return tables


def _failure_table(runs: list[Run]) -> dict[str, list[float | None]]:
    tags = [*FAILURE_TAGS, "none"]
    return {tag: [run.summary["failure_modes"]["shares"].get(tag) for run in runs] for tag in tags}


def _turn_histograms(runs: list[Run]) -> dict[str, list[float | None]]:
    """{turns used: [share of the run's scored episodes per run]}."""
    turns = sorted({k for run in runs for k in run.summary["turns_histogram"]}, key=int)
    table: dict[str, list[float | None]] = {t: [] for t in turns}
    for run in runs:
        scored = run.summary["n_scored"]
        for t in turns:
            table[t].append(run.summary["turns_histogram"].get(t, 0) / scored if scored else None)
    return table


def _group_order(key: str) -> tuple[int, str]:
    return (GROUP_ORDER.index(key) if key in GROUP_ORDER else len(GROUP_ORDER), key)


def _value_order(value: str) -> tuple[int, list[Any]]:
    return (HARDNESS_ORDER.index(value) if value in HARDNESS_ORDER else len(HARDNESS_ORDER), natural(value))


def _transpose(table: dict[str, list[float | None]]) -> list[list[float | None]]:
    columns = list(table.values())
    return [list(row) for row in zip(*columns, strict=True)] if columns else []


def _html_table(header: list[str], rows: list[list[str]], numeric: range | None = None) -> str:
    numeric = numeric if numeric is not None else range(1, len(header))
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join(
        "<tr>"
        + "".join(f'<td class="num">{c}</td>' if j in numeric else f"<td>{c}</td>" for j, c in enumerate(row))
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _excluded_rows(runs: list[Run]) -> list[list[str]]:
    """Every excluded episode of every run: run, episode, reason, attempts, error."""
    return [
        [run.label, episode_name(e), words, str(e["attempts"]), e["error"] or ""]
        for run in runs
        for words, entries in excluded_by_reason(run.summary)
        for e in entries
    ]


def _ignored_rows(runs: list[Run]) -> list[list[str]]:
    """Every record a run directory holds but does not count: run, where, why."""
    return [[run.label, ignored_where(r), r["why"]] for run in runs for r in run.summary["ignored_records"]]


def _runs_rows(runs: list[Run]) -> list[list[str]]:
    return [
        [
            run.label,
            str(run.directory),
            ", ".join(run.summary["envs"]),
            ", ".join(run.summary["reward_modes"]),
            denominator_text(run.summary),
            str(len(run.ignored)),
            run.plan_note,
        ]
        for run in runs
    ]


COMPARE_NOTE = (
    "Episodes compare by task and epoch (the same seed). Flipped: solved in one run and not in the other; "
    "episodes one run lacks or excluded compare in neither direction."
)
RUNS_HEADER = ["Run", "Directory", "Envs", "Reward mode", "Episodes", "Records not counted", "Plan from"]
EXCLUDED_HEADER = ["Run", "Episode", "Why it is excluded", "Attempts", "Error"]
IGNORED_HEADER = ["Run", "Record", "Why it is not counted"]
DENOMINATOR_NOTE = (
    "Rates are over the scored episodes (solved, failed, timeout); an episode whose sandbox the agent "
    "destroyed is failed. Excluded are only corrupt golds and env or model errors that persisted after "
    "the retries, each listed below. A bare submit does not count as a turn of its own."
)


def _html_body(runs: list[Run]) -> str:
    legend = _legend(runs)
    parts = ["<h2>Runs</h2>"]
    run_rows = [[_e(cell) for cell in row] for row in _runs_rows(runs)]
    for run, row in zip(runs, run_rows, strict=True):
        row[0] = f'<span style="color:{run.color}">■</span> {row[0]}'
    parts.append(_html_table(RUNS_HEADER, run_rows, numeric=range(5, 6)))
    parts.append("<h2>Headline</h2>")
    k_max = _most_epochs(runs)
    columns = [_headline_rows(run, k_max) for run in runs]
    rows = [[_e(name), *(_e(col[i][1]) for col in columns)] for i, (name, _) in enumerate(columns[0])]
    parts.append(_html_table(["Metric", *(run.label for run in runs)], rows))
    parts.append(f'<p class="note">{_e(DENOMINATOR_NOTE)}</p>')
    excluded = _excluded_rows(runs)
    parts.append(f'<h2 id="excluded">Excluded episodes ({len(excluded)})</h2>')
    if excluded:
        parts.append(_html_table(EXCLUDED_HEADER, [[_e(c) for c in r] for r in excluded], range(3, 4)))
    else:
        parts.append('<p class="note">None: every recorded episode is scored.</p>')
    ignored = _ignored_rows(runs)
    parts.append(f'<h2 id="not-counted">Records not counted ({len(ignored)})</h2>')
    if ignored:
        parts.append(_html_table(IGNORED_HEADER, [[_e(c) for c in r] for r in ignored], range(0)))
    else:
        parts.append('<p class="note">None: no duplicate, foreign or unreadable record.</p>')
    parts += ['<h2 id="turn-curve">Success rate vs turn budget</h2>', legend]
    parts.append(_line_chart(runs, _curves(runs), "success rate vs turn budget"))
    parts.append('<h2 id="groups">Success by group</h2>')
    groups = _group_tables(runs)
    if not groups:
        parts.append('<p class="note">The records carry no group labels.</p>')
    for key, table in groups.items():
        parts += [f"<h3>{_e(key)}</h3>", legend]
        parts.append(_bar_chart(list(table), runs, _transpose(table), f"success rate by {key}"))
    parts += ['<h2 id="failure-modes">Failure modes (share of scored unsolved episodes)</h2>', legend]
    failures = _failure_table(runs)
    parts.append(_bar_chart(list(failures), runs, _transpose(failures), "failure-mode shares"))
    unsolved = ", ".join(f"{_e(r.label)}: {r.summary['failure_modes']['n_unsolved']}" for r in runs)
    parts.append(f'<p class="note">Unsolved episodes: {unsolved}. Tags overlap.</p>')
    parts += ['<h2 id="turns">Turns used (share of scored episodes)</h2>', legend]
    histogram = _turn_histograms(runs)
    parts.append(_column_chart(list(histogram), runs, _transpose(histogram), "turns histogram"))
    parts += ['<h2 id="episodes">Episodes</h2>', '<div id="explorer"></div>']
    if len(runs) > 1:
        parts += ['<h2 id="compare-runs">Run vs run: flipped episodes</h2>', '<div id="compare"></div>']
        parts.append(f'<p class="note">{_e(COMPARE_NOTE)}</p>')
    parts.append('<noscript><p class="note">The episode view needs JavaScript.</p></noscript>')
    return "\n".join(parts)


# ------------------------------------------------------------------------------- markdown


def _md(value: object) -> str:
    text = html.escape(" ".join(str(value).split()), quote=False)
    return re.sub(r"([\\`*_\[\]|])", r"\\\1", text)


def _md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(_md(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_md(c) for c in row) + " |" for row in rows]
    return [*lines, ""]


def _share_rows(table: dict[str, list[float | None]], fmt: Callable[[float | None], str]) -> list[list[str]]:
    return [[name, *(fmt(v) for v in values)] for name, values in table.items()]


def _md_flips(runs: list[Run]) -> list[str]:
    """The flipped episodes between the first run and each other one."""
    lines: list[str] = []
    for other in runs[1:]:
        f = flips(runs[0], other)
        lines += [f"## Flipped episodes: {_md(runs[0].label)} (A) vs {_md(other.label)} (B)", ""]
        lines.append(
            f"{len(f.gained)} solved only in B, {len(f.lost)} solved only in A; {f.both} solved in both, "
            f"{f.neither} in neither; {f.only_one} not comparable (missing or excluded)."
        )
        lines.append("")
        listed = [("solved only in B", k) for k in f.gained] + [("solved only in A", k) for k in f.lost]
        if listed:
            rows = [
                [episode_name({"task_id": k[1], "epoch": k[2]}), k[0], why]
                for why, k in listed[:FLIPS_LISTED]
            ]
            lines += _md_table(["Episode", "Env", "Flip"], rows)
            if len(listed) > FLIPS_LISTED:
                lines += [f"... and {len(listed) - FLIPS_LISTED} more (see the HTML report).", ""]
    return lines


def _markdown(runs: list[Run], generated: str) -> str:
    labels = [run.label for run in runs]
    lines = ["# intercode-agents report", "", generated, "", "## Runs", ""]
    lines += _md_table(RUNS_HEADER, _runs_rows(runs))
    lines += ["## Headline", ""]
    columns = [_headline_rows(run, _most_epochs(runs)) for run in runs]
    lines += _md_table(
        ["Metric", *labels], [[n, *(c[i][1] for c in columns)] for i, (n, _) in enumerate(columns[0])]
    )
    lines += [_md(DENOMINATOR_NOTE), ""]
    excluded = _excluded_rows(runs)
    lines += [f"## Excluded episodes ({len(excluded)})", ""]
    lines += _md_table(EXCLUDED_HEADER, excluded) if excluded else ["None.", ""]
    ignored = _ignored_rows(runs)
    lines += [f"## Records not counted ({len(ignored)})", ""]
    lines += _md_table(IGNORED_HEADER, ignored) if ignored else ["None.", ""]
    lines += ["## Success rate vs turn budget", ""]
    curves = _curves(runs)
    budget = max(len(c) for c in curves)
    lines += _md_table(
        ["Turns", *labels],
        [[str(k), *(_pct(c[k - 1]) if k <= len(c) else "n/a" for c in curves)] for k in range(1, budget + 1)],
    )
    for key, table in _group_tables(runs).items():
        lines += [f"## Success by {_md(key)}", ""]
        lines += _md_table([key, *labels], _share_rows(table, _pct))
    lines += ["## Failure modes (share of scored unsolved episodes; tags overlap)", ""]
    lines += _md_table(["Tag", *labels], _share_rows(_failure_table(runs), _pct))
    lines += ["## Turns used (share of scored episodes)", ""]
    lines += _md_table(["Turns", *labels], _share_rows(_turn_histograms(runs), _pct))
    lines += _md_flips(runs)
    lines.append(
        "The HTML report next to this file has the charts, every episode's steps and the comparison."
    )
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------------- entry


def _output_paths(run_dirs: list[Path], out: Path | None) -> tuple[Path, Path]:
    if out is None:
        folder = run_dirs[0] if len(run_dirs) == 1 else _common_parent(run_dirs)
        out = folder / "report.html"
    elif out.suffix.lower() not in (".html", ".htm"):
        out = out / "report.html"
    out.parent.mkdir(parents=True, exist_ok=True)
    return out, out.with_suffix(".md")


def _common_parent(paths: list[Path]) -> Path:
    resolved = [p.resolve() for p in paths]
    common = resolved[0]
    while not all(common == p or common in p.parents for p in resolved):
        common = common.parent
    return common


def write_report(run_dirs: list[Path], out: Path | None = None) -> tuple[Path, Path]:
    """Write the HTML report and the Markdown summary of ``run_dirs``; return (html path, markdown path).

    ``out`` is the HTML file (``.html``; the Markdown goes next to it with ``.md``) or a directory for
    ``report.html`` and ``report.md``. By default they go into the run directory, or for several runs
    into their closest common parent directory.
    """
    if not run_dirs:
        raise ConfigError("write_report needs at least one run directory")
    runs = [load_run(Path(d)) for d in run_dirs]
    label_runs(runs)
    html_path, md_path = _output_paths([Path(d) for d in run_dirs], out)
    generated = f"Generated {time.strftime('%Y-%m-%d %H:%M:%S %Z')} from {len(runs)} run(s)."
    page = Template(TEMPLATE.read_text(encoding="utf-8")).substitute(
        title="intercode-agents report",
        generated=_e(generated),
        body=_html_body(runs),
        data=page_json(page_data(runs)),
        app=APP.read_text(encoding="utf-8"),
    )
    html_path.write_text(page, encoding="utf-8")
    md_path.write_text(_markdown(runs, generated), encoding="utf-8")
    return html_path, md_path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("run_dirs", nargs="+", type=Path, help="run directories holding trajectories.jsonl")
    parser.add_argument("-o", "--out", type=Path, help="the .html file or a directory for report.html/.md")
    args = parser.parse_args(argv)
    try:
        paths = write_report(args.run_dirs, args.out)
    except ConfigError as exc:
        parser.exit(2, f"error: {exc}\n")
    print("\n".join(str(p) for p in paths))


if __name__ == "__main__":
    main()

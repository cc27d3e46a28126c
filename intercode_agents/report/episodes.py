"""The episodes of a report as data for its page: one compact row per episode, its details, and the
tasks that flipped between two runs.

The page (``report_app.js``) filters the rows and renders only the ones in view, and parses an
episode's details only when it is opened, so a report of 10,000 episodes stays one static file that
opens fast. Long texts are cut head + tail for the page (``TEXT_CAP`` characters; the records keep
them whole). The data goes into the page as JSON inside a ``<script type="application/json">``
element with ``<``, ``>`` and ``&`` written as JSON escapes, so no text of a record can end that
element or become markup; the page only ever puts record text into the DOM as text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from intercode_agents.metrics.failure_modes import FAILURE_TAGS
from intercode_agents.metrics.summary import OUTCOMES, episode_cost, exclusion_reason, tokens_of
from intercode_agents.metrics.turns import turns_used
from intercode_agents.models.pricing import PriceTable, load_prices
from intercode_agents.trajectory import Trajectory

if TYPE_CHECKING:
    from intercode_agents.report.runs import Run

TEXT_CAP = 3000  # characters of an observation, action or thought on the page
# Characters a JSON text may hold in its strings but the page may not see raw, and their JSON escapes.
UNSAFE = (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029"))


def _json(payload: Any) -> str:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def page_json(payload: Any) -> str:
    """``payload`` as JSON that is safe inside a ``<script type="application/json">`` element."""
    text = _json(payload)
    for raw, escaped in UNSAFE:
        text = text.replace(raw, escaped)
    return text


def _cut(text: str | None) -> str | None:
    """``text`` within ``TEXT_CAP`` characters, head and tail, with a note where it was cut."""
    if text is None or len(text) <= TEXT_CAP:
        return text
    half = TEXT_CAP // 2
    omitted = len(text) - 2 * half
    note = f"[... {omitted} characters cut for the report; the record holds them ...]"
    return f"{text[:half]}\n{note}\n{text[-half:]}"


def _question(traj: Trajectory, lookup: Callable[[str], str | None]) -> str:
    return traj.question or lookup(traj.task_id) or "(the record holds no question and the task is not found)"


def details(traj: Trajectory, tags: list[str], prices: PriceTable, question: str) -> dict[str, Any]:
    """Everything the episode view shows about one episode."""
    tokens_in, tokens_out = tokens_of(traj)
    return {
        "task": traj.task_id,
        "env": traj.env,
        "epoch": traj.epoch,
        "seed": traj.seed,
        "strategy": traj.strategy,
        "model": traj.model,
        "outcome": traj.outcome,
        "excluded": exclusion_reason(traj),
        "reward": traj.reward,
        "parts": traj.reward_parts,
        "error": traj.error,
        "tags": tags,
        "group": traj.group,
        "question": _cut(question),
        "tokens": [tokens_in, tokens_out],
        "cost": episode_cost(traj, prices),
        "duration": round(traj.duration_s, 3),
        "attempts": traj.attempts,
        "retries": [{"outcome": r.outcome, "error": r.error} for r in traj.retries],
        "context": {k: v for k, v in traj.context.items() if k != "config"},
        "steps": [
            {
                "turn": s.turn,
                "kind": s.kind,
                "thought": _cut(s.thought),
                "action": _cut(s.action),
                "observation": _cut(s.observation),
                "exit_code": s.exit_code,
                "errored": s.errored,
                "reward": s.reward,
                "timed_out": s.timed_out,
                "cut": s.observation_truncated or s.output_truncated,
                "tokens": [s.input_tokens, s.output_tokens],
                "seconds": round(s.duration_s, 3),
            }
            for s in traj.steps
        ],
    }


def _task_lookup() -> Callable[[str], str | None]:
    from intercode_agents.datasets import get_task

    cache: dict[str, str | None] = {}

    def lookup(task_id: str) -> str | None:
        if task_id not in cache:
            try:
                cache[task_id] = get_task(task_id).query
            except Exception:  # records of tasks this machine has no data for
                cache[task_id] = None
        return cache[task_id]

    return lookup


def page_data(runs: list[Run], prices: PriceTable | None = None) -> dict[str, Any]:
    """The report page's data: runs, the lists rows point into, one row and one detail per episode.

    A row is ``[task id, epoch, outcome index, reward, turns, tag bits, group indexes, tokens, cost,
    env]``; tag bit ``i`` is ``tags[i]``, and the last tag is ``excluded`` (left out of the rates).
    """
    prices = prices or load_prices()
    lookup = _task_lookup()
    tags = [*FAILURE_TAGS, "excluded"]
    groups: dict[str, int] = {}
    payload_runs = []
    for run in runs:
        rows, texts = [], []
        for key in sorted(run.trajectories, key=_order):
            traj = run.trajectories[key]
            episode_tags = run.tags.get(key, [])
            bits = sum(1 << tags.index(t) for t in episode_tags if t in tags)
            if exclusion_reason(traj) is not None:
                bits |= 1 << tags.index("excluded")
            group_ids = [groups.setdefault(f"{k}={v}", len(groups)) for k, v in sorted(traj.group.items())]
            tokens = sum(tokens_of(traj))
            cost = episode_cost(traj, prices)
            reward = None if traj.reward is None else round(traj.reward, 4)
            rows.append([traj.task_id, traj.epoch, OUTCOMES.index(traj.outcome), reward, turns_used(traj)])
            rows[-1] += [bits, group_ids, tokens, None if cost is None else round(cost, 6), traj.env]
            # plain JSON: it is a string of the page's data, which page_json makes safe as a whole
            texts.append(_json(details(traj, episode_tags, prices, _question(traj, lookup))))
        payload_runs.append(
            {
                "label": run.label,
                "color": run.color,
                "dir": str(run.directory),
                "rows": rows,
                "details": texts,
            }
        )
    return {"outcomes": list(OUTCOMES), "tags": tags, "groups": list(groups), "runs": payload_runs}


def natural(text: str) -> list[Any]:
    """A sort key that puts ``bash/fs1/10`` after ``bash/fs1/9``."""
    return [int(part) if part.isdigit() else part.lower() for part in re.split(r"(\d+)", text)]


def _order(key: tuple[str, str, int]) -> tuple[Any, ...]:
    return key[0], natural(key[1]), key[2]


@dataclass(frozen=True)
class Flips:
    """How two runs compare episode by episode (same task and epoch: the same seed)."""

    gained: list[tuple[str, str, int]]  # solved in the second run, not in the first
    lost: list[tuple[str, str, int]]  # solved in the first run, not in the second
    both: int
    neither: int
    only_one: int  # episodes one of the runs does not have, or that either excluded


def flips(first: Run, second: Run) -> Flips:
    """Which episodes flipped between ``first`` and ``second`` (excluded episodes do not compare)."""
    gained, lost, both, neither, only_one = [], [], 0, 0, 0
    for key in sorted(set(first.trajectories) | set(second.trajectories), key=_order):
        a, b = first.trajectories.get(key), second.trajectories.get(key)
        if a is None or b is None or exclusion_reason(a) or exclusion_reason(b):
            only_one += 1
        elif a.solved and b.solved:
            both += 1
        elif a.solved:
            lost.append(key)
        elif b.solved:
            gained.append(key)
        else:
            neither += 1
    return Flips(gained, lost, both, neither, only_one)

"""The SQL reward: multiset IoU of the result rows, scaled by how well their order matches.

What the env supplies: a :class:`SqlOutcome` for the agent's last query (its rows, or its error) and one
for the gold query run on a fresh connection to the task's database, plus the gold SQL text. Rows are
compared as ``str(tuple(row))``, so both sides must come through the same driver (the JSON-lines SQL
helper returns deterministic JSON values).

``intercode`` mode follows the original InterCode's maths, with one deliberate exception:

- a gold that cannot run (a syntax error, a timeout, a killed statement) marks the task corrupt
  (unscored), as in strict mode. The original counted it as an empty result, so an empty agent
  result scored 1: a free win that nothing else about the task earned. That figure is still
  computed, for comparisons with the paper, and kept in the parts as ``unscored_reward``;
- the agent's last observation must be a result set, else 0;
- a gold that runs but returns no result set counts as an empty result, as in the original;
- both empty: 1. Otherwise ``iou = |A ∩ G| / |A ∪ G|`` over multisets (counts: min / max);
- when the intersection is not empty, Kendall's tau (``scipy.stats.kendalltau``) of the common rows,
  each list in its own order and compared as strings, scales it: ``round(tau * iou, 2)``; when tau is
  undefined (NaN: fewer than two rows, or all equal) the plain, unrounded IoU stays. A reversed order
  gives a negative reward.

``strict`` mode: a failing gold marks the task corrupt (unscored, reward 0); an empty gold result is
flagged in the parts; row order counts only when the gold has a top-level ORDER BY, measured as
Kendall's tau between the positions of the matched rows in both results and floored at 0; the
reward is rounded to two decimals.
"""

from __future__ import annotations

import math
import re
import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from scipy.stats import kendalltau

from intercode_agents.reward import RewardResult, check_mode

#: What an agent may see of this reward (:mod:`intercode_agents.envs.reward_view`): the overlap and order
#: of the agent's rows, and how many it returned. Hidden: ``gold_rows`` (the answer's size),
#: ``gold_empty``, ``order_matters`` (whether the gold sorts), ``gold_failed`` and ``unscored_reward``.
AGENT_PARTS = frozenset({"iou", "tau", "agent_rows"})


@dataclass(frozen=True)
class SqlOutcome:
    """What one query produced: its rows (None when the statement returns no result set) or its error."""

    rows: Sequence[Sequence[Any]] | None = None
    error: str | None = None


def _keys(rows: Sequence[Sequence[Any]]) -> list[str]:
    return [str(tuple(row)) for row in rows]


def _common_in_order(items: list[str], common: Counter[str]) -> list[str]:
    """The items that are in ``common``, in their order, each taken at most as often as it is common."""
    left = common.copy()
    kept = []
    for item in items:
        if left[item] > 0:
            left[item] -= 1
            kept.append(item)
    return kept


def _iou(agent: list[str], gold: list[str]) -> tuple[float | None, Counter[str]]:
    a, g = Counter(agent), Counter(gold)
    common = a & g
    union = a | g
    if not union:
        return None, common
    return sum(common.values()) / sum(union.values()), common


_LITERAL_OR_COMMENT = re.compile(
    r"'(?:[^'\\]|\\.|'')*'|\"(?:[^\"\\]|\\.|\"\")*\"|`[^`]*`|--[^\n]*|#[^\n]*|/\*.*?\*/", re.S
)
_ORDER_BY = re.compile(r"\border\s+by\b", re.I)


def has_top_level_order_by(sql: str) -> bool:
    """Whether the outermost query sorts its result (ORDER BY outside every parenthesis)."""
    text = _LITERAL_OR_COMMENT.sub(lambda m: " " * len(m.group(0)), sql)
    depth, outer = 0, []
    for ch in text:
        if ch == "(":
            depth += 1
        outer.append(ch if depth == 0 else " ")
        if ch == ")":
            depth = max(depth - 1, 0)
    return bool(_ORDER_BY.search("".join(outer)))


def _position_tau(agent_common: list[str], gold_common: list[str]) -> float:
    """Kendall's tau between where the matched rows sit in the agent's and in the gold's result."""
    gold_positions: dict[str, list[int]] = {}
    for pos, item in enumerate(gold_common):
        gold_positions.setdefault(item, []).append(pos)
    paired = [gold_positions[item].pop(0) for item in agent_common]
    return _kendall(list(range(len(paired))), paired)


SHORT = 24  # up to this many items, Kendall's tau is counted here rather than by scipy


def _kendall(x: Sequence[Any], y: Sequence[Any]) -> float:
    """Kendall's tau-b, exactly as ``scipy.stats.kendalltau`` gives it (NaN when undefined).

    Most lists compared here are short, where scipy's call costs far more than the counting; so up
    to ``SHORT`` items the pairs are counted here and combined with scipy's own arithmetic (the same
    integer counts, the same float operations in the same order, the same clamp to [-1, 1]), which
    gives scipy's value bit for bit (``tests/envs/sql/test_rewards_sql.py`` compares them). Longer lists go
    to scipy.
    """
    n = len(x)
    if n > SHORT:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return float(kendalltau(x, y, nan_policy="omit").statistic)
    xtie = ytie = ntie = dis = 0
    for i in range(n):
        xi, yi = x[i], y[i]
        for j in range(i + 1, n):
            xj, yj = x[j], y[j]
            tied_x, tied_y = xi == xj, yi == yj
            if tied_x or tied_y:
                xtie += tied_x
                ytie += tied_y
                ntie += tied_x and tied_y
            elif (xi < xj) != (yi < yj):
                dis += 1
    tot = n * (n - 1) // 2
    if xtie == tot or ytie == tot:
        return math.nan
    con_minus_dis = tot - xtie - ytie + ntie - 2 * dis
    tau = con_minus_dis / math.sqrt(tot - xtie) / math.sqrt(tot - ytie)
    return min(1.0, max(-1.0, tau))


def _gold_failed(
    gold: SqlOutcome, parts: dict[str, float | int | str | bool | None], figure: float = 0.0
) -> RewardResult:
    """A corrupt task: reward 0, and ``figure`` (what the mode's maths gives anyway) only in the parts,
    as ``unscored_reward``."""
    parts = parts | {"gold_failed": True, "unscored_reward": figure}
    return RewardResult(0.0, parts, corrupt=True, note=f"the gold query fails: {gold.error}")


def _intercode(agent: SqlOutcome, gold: SqlOutcome) -> RewardResult:
    parts: dict[str, float | int | str | bool | None] = {"gold_failed": False}
    if gold.error is not None:  # the original scored a failing gold as an empty result
        as_original = _intercode(agent, SqlOutcome(rows=None, error=None))
        return _gold_failed(gold, parts, as_original.reward)
    if agent.error is not None or agent.rows is None:
        parts |= {"iou": 0.0, "tau": None}
        return RewardResult(0.0, parts, note="the last action did not return rows")
    agent_keys = _keys(agent.rows)
    gold_keys = [] if gold.rows is None else _keys(gold.rows)
    parts |= {"agent_rows": len(agent_keys), "gold_rows": len(gold_keys)}
    iou, common = _iou(agent_keys, gold_keys)
    if iou is None:
        return RewardResult(1.0, parts | {"iou": 1.0, "tau": None})
    reward, tau = iou, None
    if common:
        statistic = _kendall(_common_in_order(agent_keys, common), _common_in_order(gold_keys, common))
        if not math.isnan(statistic):
            tau = float(statistic)
            reward = round(tau * iou, 2)
    return RewardResult(float(reward), parts | {"iou": round(iou, 4), "tau": tau})


def _strict(agent: SqlOutcome, gold: SqlOutcome, gold_sql: str) -> RewardResult:
    ordered = has_top_level_order_by(gold_sql)
    parts: dict[str, float | int | str | bool | None] = {"order_matters": ordered}
    if gold.error is not None or gold.rows is None:
        return _gold_failed(SqlOutcome(error=gold.error or "it returned no result set"), parts)
    gold_keys = _keys(gold.rows)
    parts |= {"gold_failed": False, "gold_empty": not gold_keys, "gold_rows": len(gold_keys)}
    if agent.error is not None or agent.rows is None:
        note = (
            f"the last query failed: {agent.error}" if agent.error else "the last action did not return rows"
        )
        return RewardResult(0.0, parts | {"iou": 0.0, "tau": None}, note=note)
    agent_keys = _keys(agent.rows)
    parts["agent_rows"] = len(agent_keys)
    iou, common = _iou(agent_keys, gold_keys)
    if iou is None:
        return RewardResult(1.0, parts | {"iou": 1.0, "tau": None}, note="both results are empty")
    tau = None
    factor = 1.0
    if ordered and sum(common.values()) >= 2:
        tau = _position_tau(_common_in_order(agent_keys, common), _common_in_order(gold_keys, common))
        factor = 0.0 if math.isnan(tau) else max(tau, 0.0)
    return RewardResult(round(iou * factor, 2), parts | {"iou": round(iou, 4), "tau": tau})


def sql_reward(agent: SqlOutcome, gold: SqlOutcome, gold_sql: str, mode: str = "intercode") -> RewardResult:
    """Score the agent's last result against the gold's (see the module docstring)."""
    if check_mode(mode) == "intercode":
        return _intercode(agent, gold)
    return _strict(agent, gold, gold_sql)

"""The SQL reward in both modes, on hand-made results with the numbers worked out."""

from __future__ import annotations

import math
import random
import warnings

import pytest
from scipy.stats import kendalltau

from intercode_agents.envs.sql.reward import SHORT, SqlOutcome, _kendall, has_top_level_order_by, sql_reward


def rows(*values: object) -> SqlOutcome:
    return SqlOutcome(rows=[v if isinstance(v, tuple) else (v,) for v in values])


def test_same_rows_same_order_score_one() -> None:
    gold = rows(("Ada", 3), ("Tom", 1))
    for mode in ("intercode", "strict"):
        result = sql_reward(rows(("Ada", 3), ("Tom", 1)), gold, "SELECT name, n FROM t", mode)
        assert (result.reward, result.parts["iou"], result.parts["tau"]) == (
            1.0,
            1.0,
            1.0 if mode == "intercode" else None,
        )


def test_reversed_rows_without_order_by() -> None:
    agent, gold, sql = rows(1, 2, 3), rows(3, 2, 1), "SELECT x FROM t"
    # IoU 3/3 = 1; common rows "(1,)","(2,)","(3,)" vs "(3,)","(2,)","(1,)": every pair discordant, tau = -1
    old = sql_reward(agent, gold, sql, "intercode")
    assert (old.reward, old.parts["tau"]) == (-1.0, -1.0)  # the original even goes negative
    new = sql_reward(agent, gold, sql, "strict")
    assert (new.reward, new.parts["order_matters"], new.parts["tau"]) == (1.0, False, None)


def test_missing_order_by_is_caught_in_both_modes() -> None:
    gold_sql = "SELECT name FROM people ORDER BY age"
    gold, agent = rows("b", "a", "c"), rows("a", "b", "c")  # the agent forgot ORDER BY
    # pairs (a,b) discordant, (a,c) and (b,c) concordant: tau = (2 - 1) / 3 -> round(1 * 0.333, 2) = 0.33
    for mode in ("intercode", "strict"):
        result = sql_reward(agent, gold, gold_sql, mode)
        assert result.reward == 0.33
        assert result.parts["tau"] == pytest.approx(1 / 3)
    assert sql_reward(rows("c", "b", "a"), gold, gold_sql, "strict").reward == 0.0  # tau -1/3 floors at 0


def test_partial_overlap_and_undefined_tau() -> None:
    gold = rows(1, 2, 3)
    # common 2, union 4 -> 0.5; tau of ("1","2") vs ("1","2") = 1 -> 0.5
    assert sql_reward(rows(1, 2, 4), gold, "SELECT x FROM t", "intercode").reward == 0.5
    # common 1, union 3 -> 1/3; one common row: tau undefined -> the original keeps the unrounded IoU
    old = sql_reward(rows(1), gold, "SELECT x FROM t", "intercode")
    assert old.reward == pytest.approx(1 / 3) and old.parts["tau"] is None
    assert sql_reward(rows(1), gold, "SELECT x FROM t", "strict").reward == 0.33


def test_multiset_counts() -> None:
    # agent {1: 2, 2: 1}, gold {1: 1, 2: 2}: common min = 1 + 1 = 2, union max = 2 + 2 = 4 -> 0.5, tau 1
    result = sql_reward(rows(1, 1, 2), rows(1, 2, 2), "SELECT x FROM t", "intercode")
    assert (result.reward, result.parts["iou"]) == (0.5, 0.5)


def test_failing_gold_is_corrupt_in_both_modes() -> None:
    """The original scored a failing gold as an empty result (an empty answer won 1.0): not here."""
    for error in ("Unknown column 'School/Club_Team'", "the gold query timed out after 30 s"):
        gold = SqlOutcome(error=error)
        for mode in ("intercode", "strict"):
            result = sql_reward(rows(), gold, "SELECT bad", mode)
            assert (result.reward, result.corrupt, result.parts["gold_failed"]) == (0.0, True, True), mode
            assert error in (result.note or "")
            assert sql_reward(rows(1), gold, "SELECT bad", mode).corrupt


# The original InterCode's reward quirks that intercode mode keeps on purpose, so its scores compare
# with the paper's; each case names one: (agent, gold, gold SQL, the original's score, strict's score).
INTERCODE_QUIRKS = {
    "a reversed order scores below zero": (rows(1, 2, 3), rows(3, 2, 1), "SELECT x FROM t", -1.0, 1.0),
    "row order counts without ORDER BY": (rows(1, 2, 3), rows(2, 1, 3), "SELECT x FROM t", 0.33, 1.0),
    "an undefined tau keeps the unrounded IoU": (rows(1), rows(1, 2, 3), "SELECT x FROM t", 1 / 3, 0.33),
    "a gold without a result set counts as empty": (rows(), SqlOutcome(rows=None), "USE db", 1.0, 0.0),
    "rows compare as the text of their tuples": (rows(1), rows(1.0), "SELECT x FROM t", 0.0, 0.0),
}


@pytest.mark.parametrize("quirk", sorted(INTERCODE_QUIRKS))
def test_intercode_quirks_kept_on_purpose(quirk: str) -> None:
    agent, gold, gold_sql, original, strict = INTERCODE_QUIRKS[quirk]
    kept = sql_reward(agent, gold, gold_sql, "intercode")
    assert kept.reward == pytest.approx(original) and not kept.corrupt
    assert sql_reward(agent, gold, gold_sql, "strict").reward == pytest.approx(strict)


def test_empty_gold_is_flagged_and_agent_errors_score_zero() -> None:
    both_empty = sql_reward(rows(), rows(), "SELECT x FROM t WHERE 0", "strict")
    assert (both_empty.reward, both_empty.parts["gold_empty"]) == (1.0, True)
    assert sql_reward(rows(5), rows(), "SELECT x FROM t WHERE 0", "strict").reward == 0.0
    failed = SqlOutcome(error="You have an error in your SQL syntax")
    for mode in ("intercode", "strict"):
        assert sql_reward(failed, rows(1), "SELECT 1", mode).reward == 0.0
        assert (
            sql_reward(SqlOutcome(rows=None), rows(1), "SELECT 1", mode).reward == 0.0
        )  # e.g. a USE statement


def test_wrong_column_scores_zero_with_iou_showing_why() -> None:
    gold, agent = rows(("Ada",), ("Tom",)), rows(("Leeds",), ("Krakow",))
    for mode in ("intercode", "strict"):
        result = sql_reward(agent, gold, "SELECT name FROM member", mode)
        assert (result.reward, result.parts["iou"]) == (0.0, 0.0)


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT a FROM t ORDER BY a", True),
        ("select a from t order\n  by a desc limit 1", True),
        ("SELECT a FROM t UNION SELECT b FROM u ORDER BY 1", True),
        ("SELECT a FROM (SELECT a FROM t ORDER BY a) AS s", False),
        ("WITH c AS (SELECT a FROM t ORDER BY a) SELECT a FROM c", False),
        ("SELECT 'order by' FROM t", False),
        ('SELECT "x ORDER BY y" FROM t', False),
        ("SELECT a FROM t -- ORDER BY a", False),
        ("SELECT a FROM t /* ORDER BY a */", False),
        ("SELECT `order by` FROM t", False),
        ("SELECT a FROM t WHERE b = 'it''s' ORDER BY a", True),
    ],
)
def test_top_level_order_by(sql: str, expected: bool) -> None:
    assert has_top_level_order_by(sql) is expected


def test_kendall_tau_is_scipys_bit_for_bit() -> None:
    """The reward's own count of short lists gives exactly scipy's tau (ties, strings, every order)."""
    rng = random.Random(7)
    for _ in range(3000):
        n = rng.randint(0, SHORT)
        alphabet = [str((rng.randint(0, 9),)) for _ in range(rng.randint(1, 12))]
        x = [rng.choice(alphabet) for _ in range(n)]
        y = rng.sample(x, n) if rng.random() < 0.5 else [rng.choice(alphabet) for _ in range(n)]
        ours = _kendall(x, y)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = float(kendalltau(x, y, nan_policy="omit").statistic)
        assert ours == theirs or (math.isnan(ours) and math.isnan(theirs)), (x, y, ours, theirs)

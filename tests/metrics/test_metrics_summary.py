"""summarize() on hand-made trajectories, against hand-computed values (arithmetic in comments)."""

from __future__ import annotations

import json

import pytest

from intercode_agents.errors import ConfigError
from intercode_agents.metrics.summary import summarize
from intercode_agents.metrics.turns import solve_turn, turn_numbers
from intercode_agents.models.pricing import parse_price_table
from intercode_agents.trajectory import Step, Trajectory

# 1 USD per 1M input tokens, 2 USD per 1M output tokens
PRICES = parse_price_table({"models": {"m": {"input": 1.0, "output": 2.0}}}, "test")


def act(
    reward: float | None = None, *, errored: bool = False, action: str = "SELECT 1", out: str = "x"
) -> Step:
    return Step(turn=0, action=action, observation=out, errored=errored, reward=reward)


def submit(reward: float | None = None) -> Step:
    return Step(turn=0, kind="submit", action="submit", reward=reward)


def traj(
    name: str, outcome: str, steps: list[Step], reward: float | None, hardness: str, tokens: int
) -> Trajectory:
    return Trajectory(
        task_id=name,
        env="sql",
        strategy="mixed",
        model="openai:m",
        group={"hardness": hardness, "db": "pets"},
        steps=steps,
        reward=reward,
        outcome=outcome,
        input_tokens=tokens,
        output_tokens=tokens // 10,
    )


def seven_episodes() -> list[Trajectory]:
    return [
        # T1: solved by the first action (try_again scores each action)
        traj("T1", "solved", [act(1.0)], 1.0, "easy", 1000),
        # T2: solved on turn 3, after an errored action
        traj("T2", "solved", [act(0.0, errored=True), act(0.0), act(1.0)], 1.0, "easy", 3000),
        # T3: ReAct: one action, then a bare submit scored 1.0; the submit shares turn 1
        traj("T3", "solved", [act(), submit(1.0)], 1.0, "hard", 2000),
        # T4: failed: two errors, one output, submit (3 turns); premature_submit
        traj(
            "T4",
            "failed",
            [act(errored=True, action="SELEC"), act(errored=True, action="SELECT x"), act(), submit(0.5)],
            0.5,
            "hard",
            4000,
        ),
        # T5: the sandbox broke: not scored
        traj("T5", "env_error", [act(errored=True)], None, "hard", 500),
        # T6: the model broke: not scored, no steps
        traj("T6", "model_error", [], None, "easy", 0),
        # T7: ran out of time after 4 read-only looks (reward None counts as 0); paralysis
        traj(
            "T7",
            "timeout",
            [act(action=a) for a in ("SHOW TABLES", "DESCRIBE t", "SHOW TABLES", "SELECT * FROM t LIMIT 5")],
            None,
            "medium",
            4000,
        ),
    ]


def test_summary_matches_hand_computed_values() -> None:
    s = summarize(seven_episodes(), prices=PRICES)
    assert s["n_episodes"] == 7
    assert s["outcomes"] == {
        "solved": 3,
        "failed": 1,
        "timeout": 1,
        "tokens_exhausted": 0,
        "cost_exhausted": 0,
        "env_error": 1,
        "model_error": 1,
        "corrupt": 0,
    }
    # scored: T1 T2 T3 T4 T7 = 5; solved 3 -> 3/5; T5 and T6 are excluded and listed
    assert (s["n_scored"], s["n_solved"]) == (5, 3)
    assert s["denominator"] == {"planned": None, "recorded": 7, "scored": 5, "excluded": 2, "not_run": None}
    assert [(e["task_id"], e["reason"]) for e in s["excluded"]["episodes"]] == [
        ("T5", "env_error"),
        ("T6", "model_error"),
    ]
    assert s["success_rate"] == pytest.approx(0.6)
    # (1 + 1 + 1 + 0.5 + 0) / 5 = 0.7
    assert s["mean_reward"] == pytest.approx(0.7)
    # solve turns T1=1, T2=3, T3=1 -> first pass 2/5, recovery 1/5
    assert s["first_pass"] == {"solved": 2, "rate": pytest.approx(0.4)}
    assert s["recovery"] == {"solved": 1, "rate": pytest.approx(0.2)}
    # turns used T1=1 T2=3 T3=1 T4=3 T7=4 -> budget 4; within k: 2, 2, 3, 3 of 5
    assert s["turn_budget"] == 4
    assert [p["solved"] for p in s["success_at_turns"]] == [2, 2, 3, 3]
    assert [p["rate"] for p in s["success_at_turns"]] == pytest.approx([0.4, 0.4, 0.6, 0.6])
    # (1 + 3 + 1 + 3 + 4) / 5 = 2.4
    assert s["mean_turns"] == pytest.approx(2.4)
    assert s["turns_histogram"] == {"1": 2, "3": 2, "4": 1}
    # errored/actions: T1 0/1, T2 1/3, T3 0/1 (a submit is no action), T4 2/3, T7 0/4 -> (1/3 + 2/3) / 5 = 0.2
    assert s["error_rate"] == pytest.approx(0.2)
    # inputs 1000 + 3000 + 2000 + 4000 + 500 + 0 + 4000 = 14500; outputs a tenth = 1450
    assert s["tokens"]["input"] == 14500 and s["tokens"]["output"] == 1450
    assert s["tokens"]["input_per_episode"] == pytest.approx(14500 / 7)
    # 14500 * 1 / 1e6 + 1450 * 2 / 1e6 = 0.0145 + 0.0029 = 0.0174; per solved 0.0174 / 3 = 0.0058
    assert s["cost"]["total_usd"] == pytest.approx(0.0174)
    assert s["cost"]["per_solved_usd"] == pytest.approx(0.0058)
    assert s["cost"]["episodes_without_price"] == 0


def test_summary_groups_and_failure_modes() -> None:
    s = summarize(seven_episodes(), prices=PRICES)
    hardness = s["by_group"]["hardness"]
    # easy: T1 T2 T6 -> 2 scored, both solved
    assert hardness["easy"] == {"n": 3, "scored": 2, "solved": 2, "success_rate": 1.0, "mean_reward": 1.0}
    # hard: T3 T4 T5 -> 2 scored, 1 solved, rewards (1 + 0.5) / 2
    assert hardness["hard"] == {"n": 3, "scored": 2, "solved": 1, "success_rate": 0.5, "mean_reward": 0.75}
    assert hardness["medium"]["success_rate"] == 0.0
    assert s["by_group"]["db"]["pets"]["success_rate"] == pytest.approx(0.6)
    assert s["by_env"]["sql"]["solved"] == 3
    modes = s["failure_modes"]
    # scored unsolved: T4 (premature_submit), T7 (paralysis) -> 1/2 each; T5 and T6 are excluded
    assert modes["n_unsolved"] == 2
    assert modes["counts"] == {
        "action_churn": 0,
        "destructive_mutation": 0,
        "paralysis": 1,
        "premature_submit": 1,
        "sandbox_destroyed": 0,
        "context_exhausted": 0,
        "agent_crashed": 0,
        "none": 0,
    }
    assert modes["shares"]["paralysis"] == pytest.approx(0.5)


def test_summary_is_json_safe() -> None:
    s = summarize(seven_episodes(), prices=PRICES)
    assert json.loads(json.dumps(s, allow_nan=False)) == s


def test_turn_budget_argument_and_its_errors() -> None:
    s = summarize(seven_episodes(), turn_budget=2, prices=PRICES)
    assert [p["rate"] for p in s["success_at_turns"]] == pytest.approx([0.4, 0.4])
    with pytest.raises(ConfigError, match="turn_budget"):
        summarize(seven_episodes(), turn_budget=0, prices=PRICES)


def test_turn_numbering_and_solve_turn() -> None:
    t3 = seven_episodes()[2]
    assert turn_numbers(t3) == [1, 1]  # action, then a bare submit on the same turn
    flagged = traj(
        "F", "solved", [act(), Step(turn=0, kind="submit", action="submit picoCTF{x}")], 1.0, "e", 0
    )
    assert turn_numbers(flagged) == [1, 2]  # a submit carrying an answer is a turn of its own
    assert solve_turn(flagged) == 2
    # Bash rewards assemble from float parts: 0.33 * 3 + 0.01 counts as 1.0
    almost = traj("B", "solved", [act(0.0), act(0.33 + 0.33 + 0.33 + 0.01), act(0.0)], 1.0, "e", 0)
    assert solve_turn(almost) == 2
    assert solve_turn(seven_episodes()[3]) is None  # unsolved


def test_empty_run_and_unknown_prices() -> None:
    empty = summarize([], prices=PRICES)
    assert empty["success_rate"] is None and empty["mean_turns"] is None
    assert empty["cost"]["total_usd"] is None
    unknown = seven_episodes()
    unknown[0].model = "acme:unpriced"
    unknown[1].cost_usd = 0.5  # a record's own cost wins over the table
    s = summarize(unknown, prices=PRICES)
    assert s["cost"]["total_usd"] is None and s["cost"]["episodes_without_price"] == 1
    # step token counts stand in when the record has no totals
    stepwise = traj("S", "failed", [act(), act()], 0.0, "e", 0)
    stepwise.steps[0].input_tokens, stepwise.steps[1].input_tokens = 7, 5
    assert summarize([stepwise], prices=PRICES)["tokens"]["input"] == 12

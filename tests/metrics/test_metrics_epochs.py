"""Epoch metrics on hand-made records: pass@k by the unbiased estimator, mean@k and the spread,
against values computed by hand (arithmetic in comments); budget outcomes and model messages."""

from __future__ import annotations

import pytest

from intercode_agents.errors import ConfigError
from intercode_agents.metrics.epochs import pass_at_k
from intercode_agents.metrics.failure_modes import failure_tags
from intercode_agents.metrics.summary import summarize
from intercode_agents.metrics.turns import turn_numbers, turns_used
from intercode_agents.models.pricing import parse_price_table
from intercode_agents.trajectory import Step, Trajectory

PRICES = parse_price_table({"models": {}}, "test")


def sample(task: str, epoch: int, outcome: str, reward: float | None = None) -> Trajectory:
    if reward is None and outcome in ("solved", "failed"):
        reward = 1.0 if outcome == "solved" else 0.0
    return Trajectory(
        task_id=task,
        env="bash",
        strategy="s",
        model="local",
        epoch=epoch,
        seed=epoch - 1,
        steps=[Step(turn=1, action="ls", observation="a")],
        reward=reward,
        outcome=outcome,
    )


def four_tasks() -> list[Trajectory]:
    return [
        # A: 1 of 3 solved
        sample("A", 1, "solved"),
        sample("A", 2, "failed", 0.5),
        sample("A", 3, "failed"),
        # B: never solved
        *(sample("B", e, "failed") for e in (1, 2, 3)),
        # C: always solved
        *(sample("C", e, "solved") for e in (1, 2, 3)),
        # D: epoch 3 is an env error (excluded): 2 scored samples, 1 solved
        sample("D", 1, "failed"),
        sample("D", 2, "solved"),
        sample("D", 3, "env_error"),
    ]


def test_pass_at_k_is_the_unbiased_estimator() -> None:
    assert pass_at_k(3, 1, 1) == pytest.approx(1 / 3)
    assert pass_at_k(3, 1, 2) == pytest.approx(1 - 1 / 3)  # 1 - C(2,2)/C(3,2) = 1 - 1/3
    assert pass_at_k(10, 3, 4) == pytest.approx(1 - 35 / 210)  # 1 - C(7,4)/C(10,4)
    assert pass_at_k(3, 0, 3) == 0.0 and pass_at_k(3, 3, 1) == 1.0
    assert pass_at_k(5, 4, 2) == 1.0  # n - c < k: every draw of 2 holds a solved one
    with pytest.raises(ConfigError):
        pass_at_k(2, 1, 3)


def test_epochs_block_matches_hand_computed_values() -> None:
    block = summarize(four_tasks(), prices=PRICES, epochs=3)["epochs"]
    assert block["k"] == 3 and block["tasks"] == 4
    pass_at = block["pass_at_k"]
    # k=1: (1/3 + 0 + 1 + 1/2) / 4 = 11/24
    assert pass_at["1"]["value"] == pytest.approx(11 / 24) and pass_at["1"]["tasks"] == 4
    # k=2: A 1 - C(2,2)/C(3,2) = 2/3; B 0; C 1; D 1 - C(1,2)/C(2,2) = 1  -> (2/3 + 0 + 1 + 1) / 4 = 2/3
    assert pass_at["2"]["value"] == pytest.approx(2 / 3)
    # k=3: D has only 2 scored samples and is left out: (1 + 0 + 1) / 3
    assert pass_at["3"] == {"value": pytest.approx(2 / 3), "tasks": 3, "left_out": 1}
    # mean@k: solved shares (1/3, 0, 1, 1/2) -> 11/24; rewards A (1 + .5 + 0)/3 = .5, B 0, C 1, D .5
    assert block["mean_at_k"]["success"] == pytest.approx(11 / 24)
    assert block["mean_at_k"]["reward"] == pytest.approx((0.5 + 0 + 1 + 0.5) / 4)
    spread = block["spread"]
    assert (spread["always_solved"], spread["sometimes_solved"], spread["never_solved"]) == (1, 2, 1)
    by_task = {t["task_id"]: t for t in block["per_task"]}
    assert by_task["D"]["n"] == 2 and by_task["D"]["epochs"] == [1, 2]
    assert by_task["A"]["rewards"] == [1.0, 0.5, 0.0]
    assert by_task["A"]["reward_std"] == pytest.approx((((0.5**2) * 2) / 3) ** 0.5)  # pstdev of 1, .5, 0
    assert by_task["B"]["reward_std"] == 0.0


@pytest.mark.parametrize("outcome", ["timeout", "tokens_exhausted", "cost_exhausted"])
def test_a_spent_budget_is_a_scored_failure_never_excluded(outcome: str) -> None:
    records = [sample("A", 1, "solved"), sample("B", 1, outcome)]
    s = summarize(records, prices=PRICES)
    assert s["n_scored"] == 2 and s["success_rate"] == 0.5
    assert s["outcomes"][outcome] == 1 and s["excluded"]["episodes"] == []
    assert s["failure_modes"]["n_unsolved"] == 1


def test_model_messages_use_no_turn_and_are_no_actions() -> None:
    steps = [
        Step(turn=0, kind="message", action="", thought="let me look"),
        Step(turn=1, action="ls", observation="a.txt"),
        Step(turn=1, kind="message", action="", thought="still thinking"),
        Step(turn=2, action="cat a.txt", observation="hi", errored=True),
        Step(turn=3, kind="submit", action="submit", reward=0.0),
    ]
    traj = Trajectory(task_id="A", env="bash", strategy="agent", model="m", steps=steps, outcome="failed")
    assert turn_numbers(traj) == [0, 1, 1, 2, 2]
    assert turns_used(traj) == 2
    assert summarize([traj], prices=PRICES)["error_rate"] == 0.5  # 1 errored of 2 actions
    assert "premature_submit" not in failure_tags(traj)  # `ls` gave output an action before the last

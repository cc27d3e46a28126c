"""Run metrics from trajectory records: the numbers behind ``summary.json`` and the report.

Counting rules:

- **Scored episodes** are those with outcome solved or failed, or stopped by a budget (timeout,
  tokens_exhausted, cost_exhausted: failures of the agent): the denominator of every rate
  (success, first-pass, turn curve, mean reward, mean turns, error share). An episode whose sandbox
  the agent destroyed is failed, so it counts. **Excluded** are only the episodes that say nothing
  about the agent, and each one is listed in ``excluded`` with its reason: ``corrupt_gold`` (the
  task's gold cannot run; outcome corrupt, or ``corrupt``/``gold_failed`` in older records),
  ``env_error`` and ``model_error`` (the harness's or the provider's fault, after the runner's
  retries). ``denominator`` shows planned = scored + excluded + not run, so nothing leaves a rate
  unseen; records the run directory ignored (duplicates, foreign records) are passed in and listed
  in ``ignored_records``.
- **Solved** means outcome "solved" (reward 1.0). Mean reward treats a missing reward as 0.
- **Turns.** Every step is a turn, except a bare ``submit`` (one with no answer of its own), which
  only asks to score the last output and so shares the turn of the action before it, and a model
  message that called no tool (an agent's text, step kind ``message``), which runs nothing. This puts
  Try Again (each action scored) and ReAct (action, then submit) on the same turn axis, and an
  agent's turns are its tool calls.
- **Solve turn.** The turn of the first step whose reward is 1.0 (Try Again scores each step), else
  the episode's last turn. ``success_at_turns[k-1]`` is the share of scored episodes solved within
  ``k`` turns, for k = 1 .. the turn budget (argument, else the most turns any scored episode used):
  the InterCode paper's success-vs-turns curve. First pass = solved on turn 1; recovery = later.
- **Error share.** Per scored episode with at least one action, errored actions / actions (submits
  are not actions), then the mean over those episodes.
- **Tokens and cost** count every episode, excluded ones and retried attempts included (they were
  paid for). Cost is a record's own ``cost_usd`` if set, else the price table's estimate; the total
  is None when any attempt's cost is unknown, and cost per solved task is that total / the solved
  count.
- **Epochs.** With K samples per task (``--epochs``), ``epochs`` gives pass@k for k = 1..K by the
  unbiased estimator 1 - C(n-c, k)/C(n, k) per task (n scored samples, c solved; a task with fewer
  than k scored samples is left out of that k and counted), averaged over tasks; mean@k (the mean
  over tasks of each task's solved share, and of its mean reward); and the per-task spread (each
  task's solved count, its rewards' standard deviation, and how many tasks were always, sometimes
  and never solved).
- **Failure modes** are shares of the scored unsolved episodes (failed, or stopped by a budget)
  carrying each tag of :mod:`failure_modes`; tags overlap, and ``none`` counts episodes with no tag.
- **Completion, recovery within N turns, destructive mutations and the safeguards' counts** (the
  columns of the guarded-agent comparison) follow :mod:`.safeguard_metrics`. Tokens and cost include
  what the guarded agent's critic spent (``Trajectory.usage``), at the critic model's price.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

from intercode_agents.errors import ConfigError
from intercode_agents.metrics.epochs import epochs_block
from intercode_agents.metrics.failure_modes import FAILURE_TAGS, failure_tags
from intercode_agents.metrics.safeguards import (
    DEFAULT_RECOVERY_TURNS,
    comparison_metrics,
    safeguard_counts,
)
from intercode_agents.metrics.turns import actions_of, solve_turn, turns_used
from intercode_agents.models.pricing import PriceTable, cost_usd, load_prices
from intercode_agents.trajectory import (
    BUDGET_OUTCOMES,
    RETRYABLE_OUTCOMES,
    FailedAttempt,
    Outcome,
    Trajectory,
    gold_cannot_run,
)

METRICS_VERSION = 3  # 3: the destructive-mutation rate is measured on the file system
OUTCOMES: tuple[Outcome, ...] = (
    "solved",
    "failed",
    *BUDGET_OUTCOMES,
    "env_error",
    "model_error",
    "corrupt",
)
#: Why an episode is left out of the rates, with the words the summary table and the report use.
EXCLUSION_REASONS: dict[str, str] = {
    "corrupt_gold": "corrupt gold (the task's gold answer cannot run)",
    "env_error": "env_error (the harness or the engine failed) after retries",
    "model_error": "model_error (the model provider failed) after retries",
}


def exclusion_reason(traj: Trajectory) -> str | None:
    """Why ``traj`` is left out of the rates (a key of ``EXCLUSION_REASONS``), or None if it is scored."""
    if traj.outcome == "corrupt" or gold_cannot_run(traj.reward_parts):
        return "corrupt_gold"
    if traj.outcome in RETRYABLE_OUTCOMES:
        return traj.outcome
    return None


def is_scored(traj: Trajectory) -> bool:
    return exclusion_reason(traj) is None


def error_share(traj: Trajectory) -> float | None:
    """Errored actions / actions, or None when the episode ran no action."""
    actions = actions_of(traj)
    return sum(s.errored for s in actions) / len(actions) if actions else None


def _attempts(traj: Trajectory) -> list[FailedAttempt]:
    """Every attempt at the episode, the recorded one last, with the tokens it used."""
    return [*traj.retries, FailedAttempt.of(traj)]


def tokens_of(traj: Trajectory) -> tuple[int, int]:
    """(input, output) tokens of all attempts: each one's totals, else the sum over its steps, plus
    what other models (the critic) spent on them."""
    attempts = _attempts(traj)
    extra = [u for a in attempts for u in a.usage]
    return (
        sum(a.input_tokens for a in attempts) + sum(u.input_tokens for u in extra),
        sum(a.output_tokens for a in attempts) + sum(u.output_tokens for u in extra),
    )


def episode_cost(traj: Trajectory, prices: PriceTable) -> float | None:
    """The cost of all attempts, the critic's tokens included (at its own model's price); None when
    any part's cost is unknown."""
    total = 0.0
    for attempt in _attempts(traj):
        cost = attempt.cost_usd
        if cost is None:
            cost = cost_usd(traj.model, attempt.input_tokens, attempt.output_tokens, prices=prices)
        for usage in attempt.usage:
            extra = usage.cost_usd
            if extra is None:
                extra = cost_usd(
                    usage.model or traj.model, usage.input_tokens, usage.output_tokens, prices=prices
                )
            cost = None if cost is None or extra is None else cost + extra
        if cost is None:
            return None
        total += cost
    return total


def _rate(count: int, total: int) -> float | None:
    return count / total if total else None


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _success_block(trajs: list[Trajectory]) -> dict[str, Any]:
    scored = [t for t in trajs if is_scored(t)]
    solved = sum(t.solved for t in scored)
    return {
        "n": len(trajs),
        "scored": len(scored),
        "solved": solved,
        "success_rate": _rate(solved, len(scored)),
        "mean_reward": _mean([t.reward or 0.0 for t in scored]),
    }


def _breakdown(trajs: list[Trajectory], key_of: Any) -> dict[str, dict[str, Any]]:
    buckets: dict[str, list[Trajectory]] = defaultdict(list)
    for traj in trajs:
        buckets[str(key_of(traj))].append(traj)
    return {value: _success_block(buckets[value]) for value in sorted(buckets)}


def _by_group(trajs: list[Trajectory]) -> dict[str, dict[str, dict[str, Any]]]:
    keys = sorted({key for t in trajs for key in t.group})
    return {
        key: _breakdown([t for t in trajs if key in t.group], lambda t, k=key: t.group[k]) for key in keys
    }


def _turn_curve(scored: list[Trajectory], budget: int) -> list[dict[str, Any]]:
    solved_at = Counter(turn for t in scored if (turn := solve_turn(t)) is not None)
    curve, within = [], 0
    for k in range(1, budget + 1):
        within += solved_at.get(k, 0)
        curve.append({"turns": k, "solved": within, "rate": _rate(within, len(scored))})
    return curve


def _failure_modes(scored: list[Trajectory], tags_of: Callable[[Trajectory], list[str]]) -> dict[str, Any]:
    unsolved = [t for t in scored if not t.solved]
    counts = Counter({tag: 0 for tag in (*FAILURE_TAGS, "none")})
    for traj in unsolved:
        tags = tags_of(traj)
        counts.update(tags or ["none"])
    return {
        "n_unsolved": len(unsolved),
        "counts": dict(counts),
        "shares": {tag: _rate(n, len(unsolved)) for tag, n in counts.items()},
    }


def _costs(trajs: list[Trajectory], solved: int, prices: PriceTable) -> dict[str, Any]:
    costs = [episode_cost(t, prices) for t in trajs]
    unknown = sum(c is None for c in costs)
    total = None if unknown or not trajs else sum(c for c in costs if c is not None)
    tokens = sum(sum(tokens_of(t)) for t in trajs)
    return {
        "total_usd": total,
        "per_solved_usd": total / solved if total is not None and solved else None,
        "tokens_per_solved": tokens / solved if solved else None,
        "episodes_without_price": unknown,
        "prices_as_of": prices.as_of,
    }


def _excluded(trajs: list[Trajectory]) -> dict[str, Any]:
    episodes: list[dict[str, Any]] = [
        {
            "task_id": t.task_id,
            "env": t.env,
            "epoch": t.epoch,
            "seed": t.seed,
            "outcome": t.outcome,
            "reason": reason,
            "attempts": t.attempts,
            "error": t.error,
        }
        for t in trajs
        if (reason := exclusion_reason(t)) is not None
    ]
    counts = Counter({reason: 0 for reason in EXCLUSION_REASONS})
    counts.update(e["reason"] for e in episodes)
    return {"counts": dict(counts), "episodes": episodes}


def _denominator(n_recorded: int, n_scored: int, planned: int | None) -> dict[str, Any]:
    return {
        "planned": planned,
        "recorded": n_recorded,
        "scored": n_scored,
        "excluded": n_recorded - n_scored,
        "not_run": None if planned is None else max(planned - n_recorded, 0),
    }


def summarize(
    trajs: list[Trajectory],
    *,
    turn_budget: int | None = None,
    prices: PriceTable | None = None,
    planned: int | None = None,
    ignored: list[dict[str, Any]] | None = None,
    tags_of: Callable[[Trajectory], list[str]] = failure_tags,
    epochs: int | None = None,
    recovery_turns: int = DEFAULT_RECOVERY_TURNS,
) -> dict[str, Any]:
    """Metrics of a run (JSON-safe; written as ``summary.json``). See the module docstring for the rules.

    ``planned`` is the number of episodes the run set out to play (tasks x epochs), ``ignored`` the
    records its directory held but did not count (each a dict with ``line``, ``task_id`` and ``why``).
    ``tags_of`` gives an episode's failure tags (a caller that already has them passes a lookup).
    ``epochs`` is the run's number of samples per task (its plan), for the ``epochs`` block.
    ``recovery_turns`` is the N of "recovery within N turns" (:mod:`.safeguard_metrics`).
    """
    if turn_budget is not None and (isinstance(turn_budget, bool) or turn_budget < 1):
        raise ConfigError(f"turn_budget must be a positive number of turns, got {turn_budget!r}")
    if planned is not None and (isinstance(planned, bool) or planned < 0):
        raise ConfigError(f"planned must be a number of episodes, got {planned!r}")
    if isinstance(recovery_turns, bool) or recovery_turns < 0:
        raise ConfigError(f"recovery_turns must be a number of turns (0 or more), got {recovery_turns!r}")
    prices = prices or load_prices()
    scored = [t for t in trajs if is_scored(t)]
    solve_turns = [turn for t in scored if (turn := solve_turn(t)) is not None]
    budget = turn_budget or max([turns_used(t) for t in scored] + solve_turns + [1])
    first_pass = sum(turn <= 1 for turn in solve_turns)
    recovered = len(solve_turns) - first_pass
    outcomes = Counter({o: 0 for o in OUTCOMES})
    outcomes.update(t.outcome for t in trajs)
    tokens = [tokens_of(t) for t in trajs]
    tokens_in, tokens_out = sum(i for i, _ in tokens), sum(o for _, o in tokens)
    headline = _success_block(trajs)
    return {
        "metrics_version": METRICS_VERSION,
        "n_episodes": len(trajs),
        "envs": sorted({t.env for t in trajs}),
        "strategies": sorted({t.strategy for t in trajs}),
        "models": sorted({t.model for t in trajs}),
        "reward_modes": sorted({t.reward_mode for t in trajs}),
        "outcomes": dict(outcomes),
        "denominator": _denominator(len(trajs), headline["scored"], planned),
        "excluded": _excluded(trajs),
        "ignored_records": list(ignored or []),
        "retried": {
            "episodes": sum(t.attempts > 1 for t in trajs),
            "failed_attempts": sum(len(t.retries) for t in trajs),
        },
        "n_scored": headline["scored"],
        "n_solved": headline["solved"],
        "success_rate": headline["success_rate"],
        "mean_reward": headline["mean_reward"],
        "first_pass": {"solved": first_pass, "rate": _rate(first_pass, len(scored))},
        "recovery": {"solved": recovered, "rate": _rate(recovered, len(scored))},
        "turn_budget": budget,
        "success_at_turns": _turn_curve(scored, budget),
        "mean_turns": _mean([turns_used(t) for t in scored]),
        "turns_histogram": {str(k): n for k, n in sorted(Counter(turns_used(t) for t in scored).items())},
        "error_rate": _mean([share for t in scored if (share := error_share(t)) is not None]),
        "tokens": {
            "input": tokens_in,
            "output": tokens_out,
            "input_per_episode": _rate(tokens_in, len(trajs)),
            "output_per_episode": _rate(tokens_out, len(trajs)),
        },
        "cost": _costs(trajs, headline["solved"], prices),
        "by_env": _breakdown(trajs, lambda t: t.env),
        "by_group": _by_group(trajs),
        "failure_modes": _failure_modes(scored, tags_of),
        "epochs": epochs_block(scored, epochs),
        **comparison_metrics(scored, budget, recovery_turns),
        "safeguards": safeguard_counts(trajs),
    }

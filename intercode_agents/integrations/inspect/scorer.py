"""Our scorer in Inspect's form: the env's reward and parts, exactly as our runner records them.

The scorer ends the sample's episode as our runner ends one (:meth:`SampleEpisode.finish
<intercode_agents.integrations.inspect.episode.SampleEpisode.finish>`): an episode that was not
submitted is submitted as it stands, the env scores it in the reward mode of the sandbox
(``-T reward=strict``), and the record's outcome follows. The score's value holds ``reward``,
``solved`` and ``scored``; its metadata every reward part (the record's, some of which describe the
gold's effects: Inspect's log is as private as our ``trajectories.jsonl``), the outcome and the
reward mode; the whole record goes into the sample's store under :data:`RECORD_KEY`, so the log reads
back as our records (:mod:`.log_import`).

A task whose gold cannot run is ``corrupt``, as in our runner: ``scored`` is 0 and the metrics leave it
out of their denominator (``unscored`` counts them). An env failure is the harness's, never the
agent's: it raises, so Inspect records a sample error (and ``--retry-on-error`` plays it again), as
our runner retries and excludes env errors.
"""

from __future__ import annotations

import math
from typing import Any

from inspect_ai.scorer import Metric, SampleScore, Score, Target, metric, scorer
from inspect_ai.solver import TaskState
from inspect_ai.util import store

from intercode_agents.integrations.inspect.episode import AgentSettings
from intercode_agents.integrations.inspect.log_import import RECORD_KEY
from intercode_agents.integrations.inspect.tools import FOREIGN_AGENT, current_episode
from intercode_agents.trajectory import Trajectory


def _scored(scores: list[SampleScore]) -> list[dict[str, Any]]:
    values = [s.score.value for s in scores]
    return [v for v in values if isinstance(v, dict) and v.get("scored")]


@metric
def reward() -> Metric:
    """The mean reward over the scored samples (a corrupt task's is left out, as in our summary)."""

    def compute(scores: list[SampleScore]) -> float:
        values = [float(v["reward"]) for v in _scored(scores)]
        return sum(values) / len(values) if values else 0.0

    return compute


@metric
def reward_stderr() -> Metric:
    """The standard error of that mean (sample standard deviation over the square root of n)."""

    def compute(scores: list[SampleScore]) -> float:
        values = [float(v["reward"]) for v in _scored(scores)]
        if len(values) < 2:
            return 0.0
        mean = sum(values) / len(values)
        variance = sum((x - mean) ** 2 for x in values) / (len(values) - 1)
        return math.sqrt(variance / len(values))

    return compute


@metric
def solved() -> Metric:
    """The share of scored samples solved (reward 1.0), our runner's success rate."""

    def compute(scores: list[SampleScore]) -> float:
        values = [float(v["solved"]) for v in _scored(scores)]
        return sum(values) / len(values) if values else 0.0

    return compute


@metric
def unscored() -> Metric:
    """How many samples could not be scored (their task's gold cannot run)."""

    def compute(scores: list[SampleScore]) -> float:
        return float(
            sum(1 for s in scores if not (isinstance(s.score.value, dict) and s.score.value.get("scored")))
        )

    return compute


@scorer(metrics=[reward(), reward_stderr(), solved(), unscored()])
def intercode_scorer(turns: int = 10, observation_limit: int = 4000, history_turns: int | None = None) -> Any:
    """End the episode and score it with the env's reward (see the module docstring). The settings
    are those of an episode that no agent played (its record's context)."""
    settings = AgentSettings(turns=turns, observation_limit=observation_limit, history_turns=history_turns)

    async def score(state: TaskState, target: Target) -> Score:
        episode = current_episode()
        record = await episode.finish(
            settings, strategy=FOREIGN_AGENT, model=str(state.model), epoch=state.epoch
        )
        store().set(RECORD_KEY, record.model_dump(mode="json"))
        return to_score(record, _submission(episode.env, record))

    return score


def _submission(env: Any, record: Trajectory) -> str:
    """What the submit scored: the answer of envs whose submit takes one, else the last output."""
    if not env.submit_takes_argument:
        return str(env.last_observation)
    submits = [step.action for step in record.steps if step.kind == "submit"]
    return submits[-1].removeprefix("submit").strip() if submits else ""


def to_score(record: Trajectory, submission: str) -> Score:
    """A finished record as an Inspect score."""
    scored = record.outcome != "corrupt" and record.reward is not None
    value = {
        "reward": float(record.reward) if scored and record.reward is not None else 0.0,
        "solved": 1.0 if record.solved else 0.0,
        "scored": 1.0 if scored else 0.0,
    }
    explanation = record.outcome if record.error is None else f"{record.outcome}: {record.error}"
    metadata = {
        "outcome": record.outcome,
        "reward_parts": record.reward_parts,
        "reward_mode": record.reward_mode,
        "turns": record.turns,
        "task_id": record.task_id,
    }
    return Score(value=value, answer=submission, explanation=explanation, metadata=metadata)

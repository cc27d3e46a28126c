"""The trajectory record: one JSON line per finished episode.

Strategies build a :class:`Trajectory`; the runner appends it to ``trajectories.jsonl``; metrics,
reports and replay read it back. The schema is the contract between those layers.

Outcomes:

- ``solved`` (reward 1.0) and ``failed`` (anything less, including an episode whose sandbox the agent
  destroyed: the env then reports ``sandbox_lost`` in the reward parts) are the agent's results: they
  count in every rate.
- Exhausted budgets are the agent's too, and count as failures: ``timeout`` (the episode's seconds,
  ``--max-seconds-per-episode``), ``tokens_exhausted`` (``--max-tokens-per-episode``) and
  ``cost_exhausted`` (``--max-cost-per-episode``). Such an episode was stopped before it submitted,
  so its reward is None. (A spent turn budget is not an outcome: the episode is then submitted as it
  stands and scored, as in the paper.)
- ``env_error`` (the harness or the engine failed) and ``model_error`` (the model provider failed)
  say nothing about the agent; the runner retries them and, if they persist, lists them as excluded.
- ``corrupt``: the task's gold answer cannot run, so the task cannot be scored; listed and excluded.

An episode is keyed in its run by ``(task_id, epoch)``; ``seed`` is the seed of that epoch. Attempts
that ended in an env or model error before the recorded one are kept in ``retries`` (their tokens
were paid for). A run on a Ray cluster names, in every record and every retried attempt, the ``node``
that played it (its Ray node ID) and the ``engine`` its sandboxes ran on (``NAME@HOST``); a local run
and older records leave both None.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

Outcome = Literal[
    "solved", "failed", "env_error", "timeout", "model_error", "corrupt", "tokens_exhausted", "cost_exhausted"
]
#: ``message``: a model message that called no tool (an agent's text); it runs nothing and uses no turn.
#: ``evaluate``: a score of the current state the agent asked for before submitting (an MCP client's
#: ``evaluate``, where the server offers it); it runs nothing, uses a turn and records its reward.
StepKind = Literal["action", "submit", "invalid", "message", "refused", "rollback", "vetoed", "evaluate"]
#: Step kinds of the guards (see :mod:`intercode_agents.guards`): an action the guard refused before it
#: ran, a rollback of the task files, a submit the critic sent back. None of them is a submit.
GUARD_KINDS: tuple[StepKind, ...] = ("refused", "rollback", "vetoed")

#: Outcomes that are the harness's or the provider's fault: retried, and excluded if they persist.
RETRYABLE_OUTCOMES: tuple[Outcome, ...] = ("env_error", "model_error")
#: Outcomes of an episode stopped by one of its budgets: failures of the agent, never excluded.
BUDGET_OUTCOMES: tuple[Outcome, ...] = ("timeout", "tokens_exhausted", "cost_exhausted")
FULL_REWARD = 1.0 - 1e-6  # rewards assembled from float parts (0.33 * 3 + 0.01) may miss 1.0 by a hair


def is_full(reward: float | None) -> bool:
    return reward is not None and reward >= FULL_REWARD


def gold_cannot_run(parts: dict[str, Any]) -> bool:
    """The env says the task's gold itself fails (``corrupt``; ``gold_failed`` in either reward mode)."""
    return parts.get("corrupt") is True or parts.get("gold_failed") is True


def sandbox_lost(parts: dict[str, Any]) -> bool:
    """The env says the agent destroyed its own sandbox or session before the submit."""
    return parts.get("sandbox_lost") is True


class TaskFiles(BaseModel):
    """The task's files after a step, read from the sandbox's file system by the env (see
    :mod:`intercode_agents.envs.task_files`), not from the command's text. Counts are of the entries of
    the task directories as they were when the episode started; an entry is *intact* while it is the
    same kind with the same content (a mode, owner or time changed it not)."""

    destroyed: int = 0  # intact before the step, not after it: removed, rewritten, emptied, replaced
    restored: int = 0  # not intact before the step, intact after it (a rollback, say)
    damaged: int = 0  # not intact after the step
    examples: list[str] = Field(default_factory=list)  # the first paths the step destroyed (at most 10)


class Step(BaseModel):
    """One agent turn: the action sent to the environment and what came back."""

    turn: int
    kind: StepKind = "action"
    action: str
    observation: str = ""  # as the model saw it (truncated)
    exit_code: int | None = None
    errored: bool = False  # the action failed to run (non-zero exit, SQL error, exception, invalid)
    reward: float | None = None  # set where the strategy scores each step (try_again) and at submit
    duration_s: float = 0.0
    observation_truncated: bool = False  # cut for the model's context
    output_truncated: bool = False  # cut at the sandbox's capture cap
    timed_out: bool = False
    thought: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    # What the guards did at this step (all empty for unguarded episodes and older records):
    guard_flags: list[str] = Field(default_factory=list)  # what the Bash guard saw the command may destroy
    checkpoint: list[dict[str, Any]] | None = None  # task directories checkpointed before the action ran
    rollback: dict[str, Any] | None = None  # a rollback: automatic after this action, or the rollback step's
    refusal: str | None = None  # why the guard refused the action (kind "refused")
    veto: str | None = None  # the critic's reasons for sending a submit back (kind "vetoed")
    # What the step did to the task files, measured after it ran (actions and submits of envs with
    # task directories; None where nothing was measured: other envs, older records):
    task_files: TaskFiles | None = None


class TurnTokens(BaseModel):
    """One model call as token ids, where the chat model reports them and the strategy asked
    (``record_tokens``): the whole prompt it read, the completion it wrote and each completion token's
    log-probability. A trainer rebuilds the exact sequences of an episode from these, the env's
    observations being the prompt tokens that no completion wrote (:mod:`intercode_agents.runner.
    token_sequences`)."""

    turn: int  # the turn the reply went to (a plan call shares the turn of the first action)
    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float] | None = None  # one per completion token, when reported
    finish_reason: str | None = None  # "stop" (the model ended its reply), "length" (cut at max tokens)


class ModelUsage(BaseModel):
    """Tokens a model other than the agent's spent on the episode (the guarded agent's critic)."""

    role: str
    model: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0
    cost_usd: float | None = None


class FailedAttempt(BaseModel):
    """An earlier attempt of an episode that ended in an env or model error and was retried."""

    outcome: Outcome
    error: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    started_at: float = 0.0
    duration_s: float = 0.0
    usage: list[ModelUsage] = Field(default_factory=list)
    node: str | None = None  # where it was played (runs on Ray; see the module docstring)
    engine: str | None = None

    @classmethod
    def of(cls, traj: Trajectory) -> FailedAttempt:
        return cls(
            outcome=traj.outcome,
            error=traj.error,
            input_tokens=traj.input_tokens or sum(s.input_tokens for s in traj.steps),
            output_tokens=traj.output_tokens or sum(s.output_tokens for s in traj.steps),
            cost_usd=traj.cost_usd,
            started_at=traj.started_at,
            duration_s=traj.duration_s,
            usage=[u.model_copy() for u in traj.usage],
            node=traj.node,
            engine=traj.engine,
        )


class Trajectory(BaseModel):
    """A finished (or failed) episode, self-contained enough to score, report and replay."""

    task_id: str
    env: str
    strategy: str
    model: str
    model_settings: dict[str, Any] = Field(default_factory=dict)
    epoch: int = Field(default=1, ge=1)  # the sample number of this task in its run (1-based)
    seed: int | None = None
    image_id: str | None = None
    node: str | None = None  # the Ray node that played it (runs on Ray; None for a local run)
    engine: str | None = None  # the engine its sandboxes ran on, NAME@HOST (runs on Ray)
    reward_mode: str = "intercode"
    execution: str = "session"  # how actions ran: "session", or "paper" (Bash/CTF, as the original ran them)
    group: dict[str, str] = Field(default_factory=dict)  # paper groups: fs, hardness, db, tag
    question: str = ""  # the task as the agent read it (reset's observation)
    context: dict[str, Any] = Field(default_factory=dict)  # observation limit, history window, turns
    steps: list[Step] = Field(default_factory=list)
    reward: float | None = None
    reward_parts: dict[str, Any] = Field(default_factory=dict)
    outcome: Outcome = "failed"
    error: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    started_at: float = 0.0
    duration_s: float = 0.0
    retries: list[FailedAttempt] = Field(default_factory=list)
    usage: list[ModelUsage] = Field(
        default_factory=list
    )  # other models' tokens (the critic's), not in the totals above
    guards: dict[str, Any] = Field(
        default_factory=dict
    )  # the guard policy and what it did (guarded episodes)
    # Every model call as token ids, in call order (empty unless the strategy records tokens):
    turn_tokens: list[TurnTokens] = Field(default_factory=list)

    @property
    def turns(self) -> int:
        return len(self.steps)

    @property
    def solved(self) -> bool:
        return self.outcome == "solved"

    @property
    def attempts(self) -> int:
        """Attempts made at this episode: the retried ones and this one."""
        return len(self.retries) + 1

    def settle(self) -> None:
        """Set the outcome of an episode that ended normally (submitted) from its reward and parts.

        A gold that cannot run makes it ``corrupt``: unscored, so its reward becomes None (the env's
        figure stays in the parts as ``unscored_reward``) and can never be taken for a free win. A
        sandbox the agent destroyed makes it ``failed`` whatever the reward; otherwise reward 1.0 is
        ``solved``.
        """
        if gold_cannot_run(self.reward_parts):
            self.outcome = "corrupt"
            self.error = self.error or "the task's gold answer itself fails, so the episode is unscored"
            if self.reward is not None:  # (unless the env already said what its maths gives)
                self.reward_parts.setdefault("unscored_reward", self.reward)
            self.reward = None
        elif sandbox_lost(self.reward_parts):
            self.outcome = "failed"
        else:
            self.outcome = "solved" if is_full(self.reward) else "failed"

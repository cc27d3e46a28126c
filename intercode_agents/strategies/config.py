"""The settings every strategy shares. Each one is recorded in ``Trajectory.context``."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from intercode_agents.errors import ConfigError
from intercode_agents.strategies.prompts import PromptStyle
from intercode_agents.tools.observation import DEFAULT_OBSERVATION_LIMIT, MIN_OBSERVATION_LIMIT


class StrategyConfig(BaseModel):
    """Turn budget, context limits, retries and prompts of a strategy run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_turns: int = Field(default=10, ge=1, description="model turns (actions, invalid replies, submit)")
    observation_limit: int = Field(
        default=DEFAULT_OBSERVATION_LIMIT,
        ge=MIN_OBSERVATION_LIMIT,
        description="characters of each observation the model sees (head + tail)",
    )
    history_turns: int | None = Field(
        default=None, ge=1, description="past turns kept in the model's context; None keeps them all"
    )
    demos: bool = Field(default=True, description="show the few-shot demo of the env in the system prompt")
    model_retries: int = Field(default=3, ge=0, description="retries of a model call on transient errors")
    retry_initial_wait_s: float = Field(default=1.0, ge=0)
    retry_max_wait_s: float = Field(default=30.0, ge=0)
    episode_timeout_s: float | None = Field(
        default=None, gt=0, description="wall-clock limit of an episode (its seconds budget; outcome timeout)"
    )
    episode_max_tokens: int | None = Field(
        default=None, ge=1, description="input + output tokens per episode (outcome tokens_exhausted)"
    )
    episode_max_cost_usd: float | None = Field(
        default=None, gt=0, description="estimated USD per episode, from the price table (cost_exhausted)"
    )
    show_budget: bool = Field(default=False, description="tell the model what is left after each action")
    record_tokens: bool = Field(
        default=False,
        description="keep each model call's prompt and completion token ids and the completion's "
        "logprobs in the record (Trajectory.turn_tokens), where the model reports them (the local "
        "model does)",
    )
    prompt_file: str | None = Field(default=None, description="a YAML file replacing the shipped prompts")
    prompts: PromptStyle = Field(
        default="default",
        description="the shipped prompt set: 'paper' runs the InterCode paper's own ReAct and Plan & Solve "
        "loops (its prompts, action syntax and parsing; Bash and SQL), comparable with its Table 4",
    )

    @model_validator(mode="after")
    def _one_prompt_source(self) -> StrategyConfig:
        if self.prompt_file is not None and self.prompts != "default":
            raise ValueError("give prompt_file or prompts, not both (a prompt file sets its own style)")
        return self


def build_config(config_type: type[StrategyConfig], strategy: str, values: dict[str, Any]) -> StrategyConfig:
    """Validate ``values`` for ``strategy``; any problem is a ConfigError listing the valid keys."""
    try:
        return config_type(**values)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'config'}: {error['msg']}"
            for error in exc.errors()
        )
        known = ", ".join(config_type.model_fields)
        raise ConfigError(f"bad {strategy} settings ({problems}); settings: {known}") from None

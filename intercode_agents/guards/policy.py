"""The guard settings: each safeguard switched on or off on its own."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from intercode_agents.guards.checkpoint import DEFAULT_MAX_BYTES


class GuardPolicy(BaseModel):
    """Which safeguards run (all by default). Recorded with every guarded episode."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sql_guard: bool = Field(
        default=True, description="refuse SQL that does not only read (parsed by sqlglot)"
    )
    bash_guard: bool = Field(
        default=True, description="flag commands that may destroy task files and checkpoint before them"
    )
    rollback: bool = Field(
        default=True, description="checkpoint the task directory at the start; offer the rollback action"
    )
    auto_rollback: bool = Field(
        default=True, description="roll back when a flagged command errors or empties an input"
    )
    critic: bool = Field(default=True, description="a chat model checks each answer before it is submitted")
    max_vetoes: int = Field(default=2, ge=0, description="times the critic may send the agent back")
    critic_model: str | None = Field(
        default=None, description="the critic's model (a model spec); None: the agent's own model"
    )
    critic_observations: int = Field(default=3, ge=0, description="recent actions the critic sees")
    checkpoint_max_bytes: int = Field(
        default=DEFAULT_MAX_BYTES,
        ge=1 << 10,
        description="a task directory larger than this as a tar is not checkpointed",
    )

    def guard_settings(self) -> dict[str, object]:
        """The settings as a plain dict (what a record keeps)."""
        return {name: getattr(self, name) for name in GuardPolicy.model_fields}

    @classmethod
    def off(cls) -> GuardPolicy:
        """Every safeguard switched off (the guard then only passes actions through)."""
        return cls(sql_guard=False, bash_guard=False, rollback=False, auto_rollback=False, critic=False)

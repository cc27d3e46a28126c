"""The Agent Trajectory Interchange Format, ATIF-v1.7, as pydantic models.

Written from the published specification, RFC 0001 "Agent Trajectory Interchange Format (ATIF)
Specification", v1.7 (April 2026), ``rfcs/0001-trajectory-format.md`` of harbor-framework/harbor at
commit eb165d99ee2491cacd1f32d7a2eb7fe143a64587. Harbor's own models (``harbor.models.trajectories``)
need Python 3.12 and Harbor itself; these hold the same rules for our Python 3.11:

- every object forbids keys the specification does not name (custom data goes in ``extra``);
- ``step_id`` runs 1, 2, 3, ... in order;
- ``model_name``, ``reasoning_effort``, ``reasoning_content``, ``tool_calls`` and ``metrics`` belong to
  agent steps only, and an agent step with ``llm_call_count`` 0 (a deterministic dispatch, no model
  call) carries no ``metrics`` and no ``reasoning_content``;
- an observation result's ``source_call_id`` names a tool call of its own step;
- a subagent reference sets ``trajectory_id`` or ``trajectory_path``; embedded subagents have a
  ``trajectory_id``, unique among their siblings;
- a content part is text (with ``text``) or an image (with ``source``), never both;
- timestamps are ISO 8601.

``validate_file(path)`` reads and checks one file; the tests validate every file we write.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

SchemaVersion = Literal[
    "ATIF-v1.0", "ATIF-v1.1", "ATIF-v1.2", "ATIF-v1.3", "ATIF-v1.4", "ATIF-v1.5", "ATIF-v1.6", "ATIF-v1.7"
]
SCHEMA_VERSION: SchemaVersion = "ATIF-v1.7"
#: Where the specification is read (cited in docs/INTEROP.md).
SPECIFICATION = (
    "https://github.com/harbor-framework/harbor/blob/eb165d99ee2491cacd1f32d7a2eb7fe143a64587/"
    "rfcs/0001-trajectory-format.md"
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ImageSource(_Strict):
    media_type: Literal["image/jpeg", "image/png", "image/gif", "image/webp"]
    path: str


class ContentPart(_Strict):
    type: Literal["text", "image"]
    text: str | None = None
    source: ImageSource | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> ContentPart:
        if self.type == "text" and (self.text is None or self.source is not None):
            raise ValueError("a text part has text and no source")
        if self.type == "image" and (self.source is None or self.text is not None):
            raise ValueError("an image part has a source and no text")
        return self


Content = str | list[ContentPart]


class SubagentTrajectoryRef(_Strict):
    trajectory_id: str | None = None
    trajectory_path: str | None = None
    session_id: str | None = None
    extra: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _resolvable(self) -> SubagentTrajectoryRef:
        if self.trajectory_id is None and self.trajectory_path is None:
            raise ValueError("a subagent reference needs trajectory_id or trajectory_path")
        return self


class ObservationResult(_Strict):
    source_call_id: str | None = None
    content: Content | None = None
    subagent_trajectory_ref: list[SubagentTrajectoryRef] | None = None
    extra: dict[str, Any] | None = None


class Observation(_Strict):
    results: list[ObservationResult]


class ToolCall(_Strict):
    tool_call_id: str
    function_name: str
    arguments: dict[str, Any]
    extra: dict[str, Any] | None = None


class Metrics(_Strict):
    prompt_tokens: int | None = Field(default=None, ge=0)
    completion_tokens: int | None = Field(default=None, ge=0)
    cached_tokens: int | None = Field(default=None, ge=0)
    cost_usd: float | None = None
    prompt_token_ids: list[int] | None = None
    completion_token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    extra: dict[str, Any] | None = None


_AGENT_ONLY = ("model_name", "reasoning_effort", "reasoning_content", "tool_calls", "metrics")


class Step(_Strict):
    step_id: int = Field(ge=1)
    timestamp: str | None = None
    source: Literal["system", "user", "agent"]
    model_name: str | None = None
    reasoning_effort: str | float | None = None
    message: Content
    reasoning_content: str | None = None
    tool_calls: list[ToolCall] | None = None
    observation: Observation | None = None
    metrics: Metrics | None = None
    extra: dict[str, Any] | None = None
    llm_call_count: int | None = Field(default=None, ge=0)
    is_copied_context: bool | None = None

    @field_validator("timestamp")
    @classmethod
    def _iso_8601(cls, value: str | None) -> str | None:
        if value is not None:
            dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        return value

    @model_validator(mode="after")
    def _agent_fields(self) -> Step:
        if self.source != "agent":
            present = [name for name in _AGENT_ONLY if getattr(self, name) is not None]
            if present:
                raise ValueError(f"{', '.join(present)} belong to agent steps, not to a {self.source} step")
        if self.llm_call_count == 0 and (self.metrics is not None or self.reasoning_content is not None):
            raise ValueError(
                "a step with llm_call_count 0 made no model call: no metrics, no reasoning_content"
            )
        calls = {call.tool_call_id for call in self.tool_calls or []}
        for result in self.observation.results if self.observation is not None else []:
            if result.source_call_id is not None and result.source_call_id not in calls:
                raise ValueError(
                    f"observation source_call_id {result.source_call_id!r} is no tool call of its step"
                )
        return self


class Agent(_Strict):
    name: str
    version: str
    model_name: str | None = None
    tool_definitions: list[dict[str, Any]] | None = None
    extra: dict[str, Any] | None = None


class FinalMetrics(_Strict):
    total_prompt_tokens: int | None = Field(default=None, ge=0)
    total_completion_tokens: int | None = Field(default=None, ge=0)
    total_cached_tokens: int | None = Field(default=None, ge=0)
    total_cost_usd: float | None = None
    total_steps: int | None = Field(default=None, ge=0)
    extra: dict[str, Any] | None = None


class Trajectory(_Strict):
    schema_version: SchemaVersion = SCHEMA_VERSION
    session_id: str | None = None
    trajectory_id: str | None = None
    agent: Agent
    steps: list[Step]
    notes: str | None = None
    final_metrics: FinalMetrics | None = None
    continued_trajectory_ref: str | None = None
    extra: dict[str, Any] | None = None
    subagent_trajectories: list[Trajectory] | None = None

    @model_validator(mode="after")
    def _document(self) -> Trajectory:
        for index, step in enumerate(self.steps, start=1):
            if step.step_id != index:
                raise ValueError(f"step {index} has step_id {step.step_id}: step ids run 1, 2, 3, ...")
        embedded = [t.trajectory_id for t in self.subagent_trajectories or []]
        if any(t is None for t in embedded) or len(set(embedded)) != len(embedded):
            raise ValueError("embedded subagent trajectories need unique trajectory_ids")
        return self

    def to_json_dict(self) -> dict[str, Any]:
        """The trajectory as JSON, unset fields left out (as ATIF files are written)."""
        return self.model_dump(mode="json", exclude_none=True)


def validate_file(path: Path) -> Trajectory:
    """Read and check one ATIF file (pydantic's ValidationError says what is wrong)."""
    return Trajectory.model_validate(json.loads(path.read_text(encoding="utf-8")))

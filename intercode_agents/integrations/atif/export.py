"""Our records as ATIF-v1.7 trajectories: one file per episode.

How a record maps (docs/INTEROP.md has the table):

- the question is the first step (``source: "user"``); the system prompt is not in our records, so
  there is no system step;
- each of our steps is one agent step: an action, a submit, a score asked for (``evaluate``), a guard's
  refusal, rollback or veto is a tool call (``run_bash``/``run_sql``/``run_python``, ``submit``,
  ``evaluate``, ``rollback``) with its observation on the same step; a reply that could not be read
  is a step with the reply as its message and the feedback as an observation without a call; a model
  message that called no tool is a step with only its message. The model's text (our ``thought``) is
  the step's message; its tokens are the step's metrics (where one reply made several calls, its
  tokens sit on the first); what our harness measured (exit code, flags, duration, the task files,
  a Try Again score, what a guard did) is the step's ``extra``;
- a step no model made (the gold, a replay, a person, the runner's forced submit) has
  ``llm_call_count`` 0 and no metrics;
- a history window (``history_turns``) is a system step with ``extra.context_management`` (``pruning``,
  ``truncate``) where the window first drops a turn, as the RFC's section VII describes;
- the reward (ATIF has no field for it), its parts, the reward mode and the outcome are
  ``final_metrics.extra``; everything else of the record (task, env, epoch, seed, strategy and its
  settings, timings) is the root ``extra["intercode_agents"]``, so a file reads back as the record
  (:mod:`.importer`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from intercode_agents import __version__
from intercode_agents.errors import IntercodeError
from intercode_agents.integrations.atif import schema
from intercode_agents.runner.direct import FORCED_SUBMIT as DIRECT_FORCED_SUBMIT
from intercode_agents.runner.players import SPECIAL_MODELS
from intercode_agents.runner.run_dir import RUN_JSON, TRAJECTORIES, read_run_settings
from intercode_agents.runner.run_records import RunPlan, read_run_records
from intercode_agents.strategies.episode import FORCED_SUBMIT
from intercode_agents.tools.env_tools import ToolSpec, tool_specs
from intercode_agents.trajectory import Step, Trajectory

AGENT_NAME = "intercode-agents"
RECORD_KEY = "intercode_agents"  # the root extra holding the rest of the record
NO_MODEL = (*SPECIAL_MODELS, "replay")  # players that call no model: their steps made no LLM call
_STEP_EXTRA = ("exit_code", "errored", "timed_out", "output_truncated", "observation_truncated", "duration_s")
_GUARD_FIELDS = ("guard_flags", "checkpoint", "rollback", "refusal", "veto")
_TOOL_OF_KIND = {"submit": "submit", "vetoed": "submit", "evaluate": "evaluate", "rollback": "rollback"}


def _specs(env: str) -> list[ToolSpec] | None:
    from intercode_agents.envs.registry import env_class

    try:
        return tool_specs(env_class(env))
    except IntercodeError:
        return None  # a user's env this machine does not know: no tool definitions


def tool_definitions(specs: list[ToolSpec]) -> list[dict[str, Any]]:
    """Our tools in OpenAI's function-calling form, as ATIF's ``agent.tool_definitions`` holds them."""
    return [
        {
            "type": "function",
            "function": {
                "name": s.name,
                "description": s.description,
                "parameters": s.args_schema.model_json_schema(),
            },
        }
        for s in specs
    ]


def _call(step: Step, specs: list[ToolSpec] | None) -> tuple[str, dict[str, Any]]:
    """The tool call one of our steps is: its function and arguments."""
    if step.kind in _TOOL_OF_KIND:
        name = _TOOL_OF_KIND[step.kind]
        answer = step.action.removeprefix("submit").strip() if name == "submit" else ""
        return name, ({"answer": answer} if answer else {})
    run = specs[0] if specs else None
    argument = next(iter(run.args_schema.model_fields)) if run is not None else "command"
    return (run.name if run is not None else "act"), {argument: step.action}


def _extra(step: Step) -> dict[str, Any]:
    extra: dict[str, Any] = {"turn": step.turn, "kind": step.kind}
    extra |= {name: getattr(step, name) for name in _STEP_EXTRA}
    if step.reward is not None:
        extra["reward"] = step.reward  # a score taken after the action (Try Again) or the submit's
    if step.task_files is not None:
        extra["task_files"] = step.task_files.model_dump()
    guard = {name: getattr(step, name) for name in _GUARD_FIELDS if getattr(step, name)}
    if guard:
        extra["guard"] = guard
    return extra


def forced(step: Step) -> bool:
    """Whether the runner, not the agent, made this submit (its turns or context were spent)."""
    thought = step.thought or ""
    return step.kind == "submit" and (
        thought in (FORCED_SUBMIT, DIRECT_FORCED_SUBMIT) or thought.endswith("submitted as it stands")
    )


def _agent_step(step: Step, step_id: int, specs: list[ToolSpec] | None, model_made: bool) -> schema.Step:
    forced_submit = forced(step)
    by_model = model_made and not forced_submit
    extra = _extra(step) | ({"forced": step.thought} if forced_submit else {})
    message = "" if forced_submit else (step.thought or "")
    fields: dict[str, Any] = {"step_id": step_id, "source": "agent", "message": message, "extra": extra}
    if step.kind == "message":
        pass
    elif step.kind == "invalid":
        fields["message"] = step.action if not message else message
        if message:
            extra["reply"] = step.action
        fields["observation"] = schema.Observation(
            results=[schema.ObservationResult(content=step.observation)]
        )
    else:
        call_id = f"call-{step_id}"
        name, arguments = _call(step, specs)
        fields["tool_calls"] = [
            schema.ToolCall(tool_call_id=call_id, function_name=name, arguments=arguments)
        ]
        result = schema.ObservationResult(source_call_id=call_id, content=step.observation)
        fields["observation"] = schema.Observation(results=[result])
    if not by_model:
        fields["llm_call_count"] = 0
    elif step.input_tokens or step.output_tokens:
        fields["metrics"] = schema.Metrics(
            prompt_tokens=step.input_tokens, completion_tokens=step.output_tokens
        )
    return schema.Step(**fields)


def _window_step(step_id: int, history_turns: int) -> schema.Step:
    context = {"type": "pruning", "boundary": "truncate", "keep_last_turns": history_turns}
    return schema.Step(
        step_id=step_id,
        source="system",
        message=f"From here on the model is sent only the last {history_turns} turns (and the task).",
        extra={"context_management": context},
    )


def to_atif(record: Trajectory, *, session_id: str | None = None) -> schema.Trajectory:
    """One record as an ATIF trajectory (see the module docstring)."""
    specs = _specs(record.env)
    model_made = record.model not in NO_MODEL and record.strategy != "mcp"
    steps: list[schema.Step] = [
        schema.Step(step_id=1, source="user", message=record.question, extra={"task_id": record.task_id})
    ]
    history = record.context.get("history_turns")
    for number, step in enumerate(record.steps, start=1):
        if isinstance(history, int) and number == history + 1:
            steps.append(_window_step(len(steps) + 1, history))
        steps.append(_agent_step(step, len(steps) + 1, specs, model_made))
    agent_extra = {
        "strategy": record.strategy,
        "context": record.context,
        "model_settings": record.model_settings,
    }
    agent = schema.Agent(
        name=AGENT_NAME,
        version=__version__,
        model_name=record.model,
        tool_definitions=tool_definitions(specs) if specs else None,
        extra=agent_extra,
    )
    outcome = {
        "reward": record.reward,
        "reward_parts": record.reward_parts,
        "reward_mode": record.reward_mode,
        "outcome": record.outcome,
        "error": record.error,
    }
    final = schema.FinalMetrics(
        total_prompt_tokens=record.input_tokens,
        total_completion_tokens=record.output_tokens,
        total_cost_usd=record.cost_usd,
        total_steps=len(steps),
        extra=outcome,
    )
    rest = record.model_dump(
        mode="json", exclude={"steps", "question", "reward", "reward_parts", "outcome", "error"}
    )
    return schema.Trajectory(
        session_id=session_id,
        trajectory_id=f"{record.task_id}#{record.epoch}",
        agent=agent,
        steps=steps,
        final_metrics=final,
        extra={RECORD_KEY: rest},
    )


def file_name(record: Trajectory) -> str:
    """The file of one episode: its task id made a file name, and its epoch."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", record.task_id.replace("/", "__")).strip("-") or "task"
    return f"{slug}.epoch{record.epoch}.json"


def write_atif(record: Trajectory, out_dir: Path, *, session_id: str | None = None) -> Path:
    """Write one record's ATIF file into ``out_dir``; its path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / file_name(record)
    document = to_atif(record, session_id=session_id).model_dump_json(indent=2, exclude_none=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(document + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def run_records(run_dir: Path) -> list[Trajectory]:
    """The records of a run directory that count (its plan's rules, as the report reads them)."""
    path = run_dir / TRAJECTORIES
    if not path.is_file():
        raise IntercodeError(f"{run_dir} has no {TRAJECTORIES}: is it a run directory?")
    plan = RunPlan.from_settings(read_run_settings(run_dir)) if (run_dir / RUN_JSON).is_file() else None
    return list(read_run_records(path, plan, bad_lines="ignore").accepted.values())


def export_run(run_dir: Path, out_dir: Path) -> list[Path]:
    """Write one ATIF file per counted episode of ``run_dir`` into ``out_dir``."""
    return write_all(run_records(run_dir), out_dir, session_id=session_of(run_dir))


def session_of(run_dir: Path) -> str:
    """A run's session id: the run directory's name."""
    return f"{AGENT_NAME}/{run_dir.resolve().name}"


def write_all(records: Iterable[Trajectory], out_dir: Path, *, session_id: str | None) -> list[Path]:
    return [write_atif(record, out_dir, session_id=session_id) for record in records]

"""ATIF trajectories read as our records, so the viewer and the report open them beside our runs.

A file we wrote (:mod:`.export`) reads back as the record it came from. Any other ATIF file (Harbor's
agents', a tracing tool's) becomes a record as best it maps:

- the first user step is the question; each tool call of an agent step is one of our steps (its
  action the call's first text argument, or the arguments as JSON; its observation the result that
  names the call), a ``submit`` call a submit; an agent step without tool calls is a ``message`` step;
  the step's message is the thought, its metrics the tokens (on the step's first call);
- the reward comes from the file's ``final_metrics.extra.reward`` where it has one, else, for a Harbor
  trial (``<trial>/agent/trajectory.json``), from the trial's verifier (``verifier/reward.json``, which
  Harbor reads before ``reward.txt``); an episode with a reward of 1 is solved, any other failed, and
  one with no reward at all failed with the reason in ``error``;
- the task id is the Harbor trial's task name, else the trajectory id, the session id or the file name;
  the env ``harbor`` for a trial, ``atif`` otherwise; strategy and model the agent's name and model.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from intercode_agents.errors import ConfigError
from intercode_agents.integrations.atif import schema
from intercode_agents.integrations.atif.export import RECORD_KEY
from intercode_agents.trajectory import Step, TaskFiles, Trajectory

_STEP_EXTRA = ("exit_code", "errored", "timed_out", "output_truncated", "observation_truncated", "duration_s")


def _text(content: schema.Content | None) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(part.text or f"[image {part.source.path if part.source else ''}]" for part in content)


def _argument_text(arguments: dict[str, Any]) -> str:
    texts = [value for value in arguments.values() if isinstance(value, str)]
    return texts[0] if len(arguments) == 1 and texts else json.dumps(arguments, ensure_ascii=False)


def _ours(step: schema.Step, turn: int) -> Step | None:
    """One of our own exported steps (its extra says what it was), else None."""
    extra = step.extra or {}
    if "kind" not in extra or "turn" not in extra:
        return None
    kind = extra["kind"]
    call = step.tool_calls[0] if step.tool_calls else None
    result = step.observation.results[0] if step.observation and step.observation.results else None
    message = _text(step.message)
    thought: str | None = message
    if kind == "invalid":  # the unreadable reply is the message, unless the model's text was kept too
        action, thought = (extra["reply"], message) if "reply" in extra else (message, None)
    elif kind == "message":
        action = ""
    elif call is not None and call.function_name in ("submit", "evaluate", "rollback"):
        answer = call.arguments.get("answer", "")
        action = f"submit {answer}".strip() if call.function_name == "submit" else call.function_name
    else:
        action = _argument_text(call.arguments) if call is not None else ""
    thought = extra.get("forced") or thought
    metrics = step.metrics
    guard = extra.get("guard") or {}
    return Step(
        turn=int(extra["turn"]),
        kind=kind,
        action=action,
        observation=_text(result.content) if result is not None else "",
        reward=extra.get("reward"),
        thought=thought or None,
        input_tokens=(metrics.prompt_tokens or 0) if metrics else 0,
        output_tokens=(metrics.completion_tokens or 0) if metrics else 0,
        task_files=TaskFiles.model_validate(extra["task_files"]) if extra.get("task_files") else None,
        **{name: extra[name] for name in _STEP_EXTRA if name in extra},
        **guard,
    )


def _foreign(step: schema.Step, turn: int) -> list[Step]:
    """A step of another producer's file as our steps (one per tool call)."""
    thought = _text(step.message).strip() or step.reasoning_content or None
    tokens = (
        (step.metrics.prompt_tokens or 0, step.metrics.completion_tokens or 0) if step.metrics else (0, 0)
    )
    results = step.observation.results if step.observation else []
    calls = step.tool_calls or []
    if not calls:
        observation = "\n".join(_text(r.content) for r in results)
        return [Step(turn=turn, kind="message", action="", observation=observation, thought=thought,
                     input_tokens=tokens[0], output_tokens=tokens[1])]  # fmt: skip
    steps = []
    for index, call in enumerate(calls):
        answer = "\n".join(_text(r.content) for r in results if r.source_call_id == call.tool_call_id)
        submit = call.function_name == "submit"
        steps.append(
            Step(
                turn=turn + index,
                kind="submit" if submit else "action",
                action=("submit " + _argument_text(call.arguments)).strip()
                if submit
                else _argument_text(call.arguments),
                observation=answer,
                thought=thought if index == 0 else None,
                input_tokens=tokens[0] if index == 0 else 0,
                output_tokens=tokens[1] if index == 0 else 0,
            )
        )
    return steps


def _harbor_trial(path: Path) -> Path | None:
    """The Harbor trial folder of ``<trial>/agent/trajectory.json``, if that is where ``path`` is."""
    trial = path.parent.parent
    return trial if path.parent.name == "agent" and (trial / "verifier").is_dir() else None


def _harbor_reward(trial: Path) -> tuple[float | None, dict[str, Any]]:
    """The verifier's reward and parts: ``reward.json`` first, as Harbor reads them, then ``reward.txt``."""
    folder = trial / "verifier"
    if (folder / "reward.json").is_file():
        parts = json.loads((folder / "reward.json").read_text(encoding="utf-8"))
        reward = parts.get("reward")
        return (float(reward) if isinstance(reward, (int, float)) else None), parts
    if (folder / "reward.txt").is_file():
        return float((folder / "reward.txt").read_text(encoding="utf-8").strip()), {}
    return None, {}


def _task_name(trial: Path) -> str | None:
    result = trial / "result.json"
    if result.is_file():
        data = json.loads(result.read_text(encoding="utf-8"))
        name = data.get("task_name") if isinstance(data, dict) else None
        return str(name) if name else None
    return None


def to_record(document: schema.Trajectory, path: Path | None = None) -> Trajectory:
    """An ATIF trajectory as our record (see the module docstring)."""
    rest = (document.extra or {}).get(RECORD_KEY)
    final = (document.final_metrics.extra if document.final_metrics else None) or {}
    question = next((_text(s.message) for s in document.steps if s.source == "user"), "")
    agent_steps = [s for s in document.steps if s.source == "agent"]
    if isinstance(rest, dict):
        own = [_ours(s, n) for n, s in enumerate(agent_steps, start=1)]
        record = Trajectory.model_validate(rest | {"question": question, "steps": [s for s in own if s]})
        record.reward, record.reward_parts = final.get("reward"), dict(final.get("reward_parts") or {})
        record.outcome, record.error = final.get("outcome", "failed"), final.get("error")
        return record
    trial = _harbor_trial(path) if path is not None else None
    reward, parts = (final.get("reward"), dict(final.get("reward_parts") or {}))
    if reward is None and trial is not None:
        reward, parts = _harbor_reward(trial)
    steps: list[Step] = []
    for step in agent_steps:
        steps.extend(_foreign(step, len(steps) + 1))
    task_id = (trial and _task_name(trial)) or document.trajectory_id or document.session_id
    metrics = document.final_metrics
    record = Trajectory(
        task_id=task_id or (path.stem if path is not None else "trajectory"),
        env="harbor" if trial is not None else "atif",
        strategy=document.agent.name,
        model=document.agent.model_name or document.agent.name,
        question=question,
        steps=steps,
        reward=float(reward) if isinstance(reward, (int, float)) else None,
        reward_parts=parts,
        input_tokens=(metrics.total_prompt_tokens or 0) if metrics else sum(s.input_tokens for s in steps),
        output_tokens=(metrics.total_completion_tokens or 0)
        if metrics
        else sum(s.output_tokens for s in steps),
        cost_usd=metrics.total_cost_usd if metrics else None,
        context={"imported_from": str(path) if path else None, "format": document.schema_version},
    )
    record.settle()
    if record.reward is None:
        record.error = "the trajectory holds no reward (and no Harbor verifier result sits beside it)"
    return record


def read_file(path: Path) -> Trajectory:
    """One ATIF file as a record (ConfigError with the reason when it is no valid ATIF)."""
    try:
        document = schema.validate_file(path)
    except (OSError, json.JSONDecodeError, ValidationError) as exc:
        raise ConfigError(f"{path} is not a valid ATIF trajectory: {str(exc).splitlines()[0]}") from exc
    return to_record(document, path)


def atif_files(path: Path) -> list[Path]:
    """The ATIF files of ``path``: the file itself, or every ``*.json`` below a folder whose
    ``schema_version`` says ATIF (a Harbor job folder holds them as ``<trial>/agent/trajectory.json``)."""
    if path.is_file():
        return [path]
    return [p for p in sorted(path.rglob("*.json")) if is_atif(p)]


def is_atif(path: Path) -> bool:
    """Whether ``path`` is a JSON file that declares an ATIF schema version."""
    try:
        with path.open("rb") as handle:
            head = handle.read(4096)
    except OSError:
        return False
    return b'"schema_version"' in head and b"ATIF-v" in head


def read_all(paths: Iterable[Path]) -> list[Trajectory]:
    """Every record of these ATIF files, epochs numbered so that one task's episodes stay apart."""
    records = [read_file(path) for path in paths]
    seen: dict[tuple[str, str], int] = {}
    for record in records:
        key = (record.env, record.task_id)
        if key in seen and record.env in ("atif", "harbor"):
            record.epoch = seen[key] + 1
        seen[key] = max(seen.get(key, 0), record.epoch)
    return records

"""Inspect logs (``.eval``, ``.json``) read as our records, so the viewer compares their runs with ours.

A sample our ``intercode`` task played carries its record in its store (:data:`RECORD_KEY`):
that record is read back as it is. Any other sample becomes a record as best it maps:

- the question is the sample's input; each tool call of an assistant message is one of our steps
  (its action the call's first text argument, or the arguments as JSON; its observation the text of
  the tool message answering it, ``errored`` when that message is an error; a call of ``submit`` a
  submit), an assistant message without tool calls a ``message`` step; the message's text is the
  first call's thought;
- the reward is the sample's first score: a number as it is, a dict's ``reward`` (or its first
  number), Inspect's letter grades by Inspect's own reading (``C`` 1, ``I`` 0, ``P`` 0.5, ``N`` 0);
- a sample that errored is an ``env_error`` (Inspect's errors are the harness's or the provider's),
  one stopped by a limit keeps its score and says so in its context;
- the env is the log's task, the strategy its solvers, the model the log's model, tokens the sample's
  model usage.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from intercode_agents.errors import ConfigError
from intercode_agents.trajectory import Step, Trajectory

T = TypeVar("T")

#: Where a sample's store keeps our record of its episode (a Trajectory as JSON; the scorer writes it).
RECORD_KEY = "intercode_agents/trajectory"


def _inspect_log() -> Any:
    try:
        from inspect_ai import log
    except ImportError as exc:
        raise ConfigError(
            "reading an Inspect log needs inspect-ai: pip install 'intercode-agents[inspect]'"
        ) from exc
    return log


def is_inspect_log(path: Path) -> bool:
    """Whether ``path`` is an Inspect log file (an ``.eval`` archive, or a ``.json`` log)."""
    if path.suffix == ".eval":
        return path.is_file()
    if path.suffix != ".json" or not path.is_file():
        return False
    with path.open("rb") as handle:
        head = handle.read(4096)
    return b'"eval"' in head and b'"version"' in head and b"ATIF-v" not in head


def _argument_text(arguments: dict[str, Any]) -> str:
    texts = [value for value in arguments.values() if isinstance(value, str)]
    return texts[0] if len(arguments) == 1 and texts else json.dumps(arguments, ensure_ascii=False)


def _reward(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, dict):
        if isinstance(value.get("reward"), (int, float)):
            return float(value["reward"])
        numbers = [v for v in value.values() if isinstance(v, (int, float)) and not isinstance(v, bool)]
        return float(numbers[0]) if numbers else None
    if isinstance(value, str):
        from inspect_ai.scorer import value_to_float

        try:
            return float(value_to_float()(value))
        except (ValueError, TypeError):
            return None
    return None


def _steps(messages: list[Any]) -> list[Step]:
    answers = {m.tool_call_id: m for m in messages if m.role == "tool"}
    steps: list[Step] = []
    for message in messages:
        if message.role != "assistant":
            continue
        calls = message.tool_calls or []
        thought = message.text.strip() or None
        if not calls:
            steps.append(Step(turn=len(steps) + 1, kind="message", action="", thought=thought))
            continue
        for index, call in enumerate(calls):
            answer = answers.get(call.id)
            submit = call.function == "submit"
            arguments = call.arguments or {}
            action = _argument_text(arguments) if arguments else ""
            steps.append(
                Step(
                    turn=len(steps) + 1,
                    kind="submit" if submit else "action",
                    action=f"submit {action}".strip() if submit else action,
                    observation=answer.text if answer is not None else "",
                    errored=answer is not None and answer.error is not None,
                    thought=thought if index == 0 else None,
                )
            )
    return steps


def sample_record(log: Any, sample: Any, path: Path) -> Trajectory:
    """One sample of an Inspect log as our record (see the module docstring)."""
    stored = (sample.store or {}).get(RECORD_KEY)
    if isinstance(stored, dict):
        return Trajectory.model_validate(stored)
    question = (
        sample.input
        if isinstance(sample.input, str)
        else next((m.text for m in sample.input if m.role == "user"), "")
    )
    scores = list((sample.scores or {}).items())
    reward = _reward(scores[0][1].value) if scores else None
    usage = list((sample.model_usage or {}).values())
    solvers = [step.solver for step in (log.plan.steps if log.plan else [])]
    record = Trajectory(
        task_id=str(sample.id),
        env=str(log.eval.task),
        strategy="+".join(solvers) or "inspect",
        model=str(log.eval.model),
        epoch=int(sample.epoch or 1),
        question=question,
        steps=_steps(list(sample.messages or [])),
        reward=reward,
        reward_parts={name: score.value for name, score in scores if not isinstance(score.value, dict)}
        | (scores[0][1].value if scores and isinstance(scores[0][1].value, dict) else {}),
        input_tokens=sum(u.input_tokens or 0 for u in usage),
        output_tokens=sum(u.output_tokens or 0 for u in usage),
        context={
            "imported_from": str(path),
            "format": f"inspect_ai log v{log.version}",
            "scorer": scores[0][0] if scores else None,
            "limit": sample.limit.model_dump() if sample.limit is not None else None,
        },
    )
    if sample.error is not None:
        record.outcome, record.error = "env_error", str(sample.error.message)
    else:
        record.settle()
        if record.reward is None:
            record.error = "the sample has no score"
    return record


def _off_the_loop(read: Callable[[], T]) -> T:
    """``read()``, in a thread of its own when an event loop runs in this one: Inspect's synchronous
    readers re-enter a running loop by patching asyncio for the whole process (nest_asyncio), which
    changes how every later task is cancelled and shielded; in a thread without a loop they do not."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return read()
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(read).result()


def read_log(path: Path) -> list[Trajectory]:
    """Every sample of the Inspect log at ``path`` as our record."""
    return _off_the_loop(lambda: _records_of(path))


def _records_of(path: Path) -> list[Trajectory]:
    log = _inspect_log().read_eval_log(str(path), resolve_attachments=True)
    if log.status == "error" and not log.samples:
        raise ConfigError(f"the Inspect log {path} holds no samples (its run failed: {log.error.message})")
    return [sample_record(log, sample, path) for sample in log.samples or []]

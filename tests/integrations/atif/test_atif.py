"""ATIF-v1.7: our records written as ATIF trajectories and read back, and other producers' files read.

The records come from real episodes (real envs, our runner) played by scripted models: a tool-calling
agent with a history window, a reply without a tool call, a call of a tool that does not exist and a
forced submit; a ReAct agent with a reply that holds no action; the gold. Every file written is
validated against the schema's models (written from the published v1.7 specification).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from pydantic import ValidationError

from intercode_agents.integrations.atif import schema
from intercode_agents.integrations.atif.export import export_run, forced, to_atif
from intercode_agents.integrations.atif.importer import atif_files, read_all, read_file
from intercode_agents.models.scripted import ScriptedChatModel
from intercode_agents.runner.config import EvalConfig
from intercode_agents.runner.eval import run_eval
from intercode_agents.trajectory import Trajectory

USAGE = {"input_tokens": 120, "output_tokens": 30, "total_tokens": 150}


def _call(text: str, name: str, args: dict[str, Any], n: int) -> AIMessage:
    return AIMessage(text, tool_calls=[{"name": name, "args": args, "id": f"c{n}"}], usage_metadata=USAGE)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
async def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("runs")
    tool_calling = ScriptedChatModel(
        [
            _call("make the folder", "run_bash", {"command": "mkdir -p /testbed/backup"}, 1),
            AIMessage("Which notes?", usage_metadata=USAGE),  # type: ignore[arg-type]
            _call("perl", "run_perl", {"command": "1"}, 2),
        ]
    )
    react = ScriptedChatModel(
        [
            "I am not sure what to do.",
            "Thought: count them.\nAction:\n```bash\ngrep -c ERROR /testbed/logs/app.log\n```",
            "Thought: done.\nAction: submit",
        ]
    )
    configs = {
        "tool_calling": EvalConfig(
            env="bash", strategy="tool_calling", model=tool_calling, selector="bash/mini/4", turns=3,
            strategy_settings={"history_turns": 1},
        ),
        "react": EvalConfig(env="bash", strategy="react", model=react, selector="bash/mini/0", turns=5),
        "gold": EvalConfig(env="sql", model="gold", selector="sql/mini/0,sql/mini/3"),
    }  # fmt: skip
    for name, config in configs.items():
        await run_eval(EvalConfig(**(config.__dict__ | {"out_dir": root / name, "progress": False})))
    return {name: root / name for name in configs}


def _records(run: Path) -> list[Trajectory]:
    return [
        Trajectory.model_validate_json(line) for line in (run / "trajectories.jsonl").read_text().splitlines()
    ]


STEP_FIELDS = (
    "turn", "kind", "action", "observation", "exit_code", "errored", "reward", "duration_s", "thought",
    "input_tokens", "output_tokens", "observation_truncated", "output_truncated", "timed_out", "task_files",
)  # fmt: skip


def _same(a: Trajectory, b: Trajectory) -> None:
    names = ("task_id", "env", "strategy", "model", "epoch", "seed", "question", "group", "context", "reward",
             "reward_parts", "outcome", "error", "input_tokens", "output_tokens", "reward_mode")  # fmt: skip
    for name in names:
        assert getattr(a, name) == getattr(b, name), name
    assert [[getattr(s, f) for f in STEP_FIELDS] for s in a.steps] == [
        [getattr(s, f) for f in STEP_FIELDS] for s in b.steps
    ]


async def test_every_episode_is_one_valid_atif_file_that_reads_back_as_its_record(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    for name, run in runs.items():
        records = _records(run)
        written = export_run(run, tmp_path / name)
        assert len(written) == len(records)
        for path in written:
            document = schema.validate_file(path)
            assert document.schema_version == "ATIF-v1.7"
            assert document.steps[0].source == "user"
            record = next(r for r in records if document.trajectory_id == f"{r.task_id}#{r.epoch}")
            assert document.steps[0].message == record.question
            assert document.final_metrics is not None and document.final_metrics.extra is not None
            assert document.final_metrics.extra["reward"] == record.reward
            assert document.final_metrics.extra["outcome"] == record.outcome
            _same(read_file(path), record)


async def test_the_mapping_of_steps_calls_tokens_and_context(runs: dict[str, Path]) -> None:
    (record,) = _records(runs["tool_calling"])
    document = to_atif(record)
    kinds = [(s.source, (s.extra or {}).get("kind")) for s in document.steps]
    assert kinds == [
        ("user", None), ("agent", "action"), ("system", None), ("agent", "invalid"), ("agent", "invalid"),
        ("agent", "submit"),
    ]  # fmt: skip
    action = document.steps[1]
    assert action.message == "make the folder" and action.tool_calls is not None
    assert action.tool_calls[0].function_name == "run_bash"
    assert action.tool_calls[0].arguments == {"command": "mkdir -p /testbed/backup"}
    assert (
        action.observation is not None
        and action.observation.results[0].source_call_id == action.tool_calls[0].tool_call_id
    )
    assert action.metrics is not None and (
        action.metrics.prompt_tokens,
        action.metrics.completion_tokens,
    ) == (120, 30)
    window = document.steps[2]
    assert window.extra == {
        "context_management": {"type": "pruning", "boundary": "truncate", "keep_last_turns": 1}
    }
    nudge = document.steps[3]
    assert nudge.message == "Which notes?" and nudge.tool_calls is None and nudge.observation is not None
    last = document.steps[-1]
    assert (
        forced(record.steps[-1]) and last.llm_call_count == 0 and last.metrics is None and last.message == ""
    )
    assert last.tool_calls is not None and last.tool_calls[0].function_name == "submit"


async def test_the_gold_makes_no_model_call_and_a_react_reply_without_an_action_is_a_message(
    runs: dict[str, Path],
) -> None:
    for record in _records(runs["gold"]):
        steps = to_atif(record).steps[1:]
        assert steps and all(s.llm_call_count == 0 and s.metrics is None for s in steps)
        assert steps[0].tool_calls is not None and steps[0].tool_calls[0].function_name == "run_sql"
    (react,) = _records(runs["react"])
    unread = to_atif(react).steps[1]
    assert unread.extra is not None and unread.extra["kind"] == "invalid" and unread.tool_calls is None


def _valid() -> dict[str, Any]:
    return {
        "schema_version": "ATIF-v1.7",
        "agent": {"name": "a", "version": "1"},
        "steps": [
            {"step_id": 1, "source": "user", "message": "hi"},
            {
                "step_id": 2, "source": "agent", "message": "", "timestamp": "2026-06-20T10:00:02Z",
                "tool_calls": [{"tool_call_id": "c1", "function_name": "bash", "arguments": {"cmd": "ls"}}],
                "observation": {"results": [{"source_call_id": "c1", "content": "a.txt"}]},
                "metrics": {"prompt_tokens": 3, "completion_tokens": 1},
            },
        ],
    }  # fmt: skip


@pytest.mark.parametrize(
    "break_it",
    [
        lambda d: d["steps"][1].update(step_id=3),  # step ids run 1, 2, 3
        lambda d: d["steps"][0].update(metrics={"prompt_tokens": 1}),  # agent-only field on a user step
        lambda d: d["steps"][1]["observation"]["results"][0].update(source_call_id="c9"),  # no such call
        lambda d: d.update(reward=1.0),  # no such key
        lambda d: d["steps"][1].update(llm_call_count=0),  # no model call, yet metrics
        lambda d: d["steps"][1].update(timestamp="yesterday"),
        lambda d: d.update(schema_version="ATIF-v2.0"),
        lambda d: d["steps"][1]["observation"]["results"][0].update(content=[{"type": "text"}]),
    ],
)
def test_the_schema_refuses_what_the_specification_forbids(break_it: Any) -> None:
    schema.Trajectory.model_validate(_valid())
    document = copy.deepcopy(_valid())
    break_it(document)
    with pytest.raises(ValidationError):
        schema.Trajectory.model_validate(document)


def test_a_harbor_trial_reads_with_its_verifiers_reward(tmp_path: Path) -> None:
    trial = tmp_path / "job" / "intercode-bash__mini__0__x1"
    (trial / "agent").mkdir(parents=True)
    (trial / "verifier").mkdir()
    document = _valid()
    document["steps"][1]["message"] = "let me look"
    document["steps"].append({"step_id": 3, "source": "agent", "message": "Done: there are 2."})
    (trial / "agent" / "trajectory.json").write_text(json.dumps(document))
    (trial / "verifier" / "reward.json").write_text(json.dumps({"reward": 1.0, "file_diff": 0.33}))
    (trial / "verifier" / "reward.txt").write_text("0\n")  # Harbor reads reward.json first
    (trial / "result.json").write_text(json.dumps({"task_name": "intercode/bash__mini__0"}))
    (trial / "config.json").write_text(json.dumps({"agent": {"name": "terminus-2"}}))
    (record,) = read_all(atif_files(tmp_path / "job"))
    assert (record.task_id, record.env, record.reward, record.outcome) == (
        "intercode/bash__mini__0",
        "harbor",
        1.0,
        "solved",
    )
    assert record.reward_parts == {"reward": 1.0, "file_diff": 0.33}
    assert [(s.kind, s.action, s.observation, s.thought) for s in record.steps] == [
        ("action", "ls", "a.txt", "let me look"),
        ("message", "", "", "Done: there are 2."),
    ]
    assert (record.input_tokens, record.output_tokens) == (3, 1)  # (no final metrics: the steps' sums)

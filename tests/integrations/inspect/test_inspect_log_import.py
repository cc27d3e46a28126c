"""Inspect logs read as our records: our task's (its records, exactly) and any other task's.

Our viewer and report then open them as runs (:mod:`intercode_agents.integrations.foreign_runs`).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from inspect_ai import Task, eval_async
from inspect_ai.dataset import Sample
from inspect_ai.log import read_eval_log
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import match
from inspect_ai.solver import generate

from intercode_agents.integrations.foreign_runs import runs_of
from intercode_agents.integrations.inspect.log_import import RECORD_KEY, read_log
from intercode_agents.integrations.inspect.tasks import intercode
from intercode_agents.report import load_run, write_report
from intercode_agents.trajectory import Trajectory


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INTERCODE_AGENTS_CACHE", str(tmp_path / "cache"))


async def test_our_tasks_log_reads_back_as_its_records_and_opens_as_a_run(tmp_path: Path) -> None:
    (log,) = await eval_async(
        intercode(env="bash", tasks="bash/mini/0,bash/mini/5", solver="gold"),
        model=get_model("mockllm/model"),
        log_dir=str(tmp_path / "logs"),
    )
    path = Path(str(log.location))
    log_read = await asyncio.to_thread(read_eval_log, str(path))
    stored = [Trajectory.model_validate(s.store[RECORD_KEY]) for s in log_read.samples or []]
    assert sorted(r.model_dump_json() for r in read_log(path)) == sorted(r.model_dump_json() for r in stored)
    (run,) = runs_of(tmp_path / "logs")  # a folder of logs: one run per log
    read = load_run(run)
    assert read.summary["success_rate"] == 1.0 and len(read.trajectories) == 2
    html, _ = write_report([run], run / "report.html")
    assert "bash/mini/5" in html.read_text()


def _answer(text: str) -> ModelOutput:
    output = ModelOutput.from_content("mockllm/model", text)
    output.usage = ModelUsage(input_tokens=7, output_tokens=2, total_tokens=9)
    return output


async def test_another_tasks_log_reads_with_its_scores_as_rewards(tmp_path: Path) -> None:
    task = Task(
        dataset=[
            Sample(id="paris", input="Capital of France?", target="Paris"),
            Sample(id="rome", input="Capital of Italy?", target="Rome"),
        ],
        solver=generate(),
        scorer=match(),
    )
    (log,) = await eval_async(
        task,
        model=get_model("mockllm/model", custom_outputs=[_answer("Paris"), _answer("Milan")]),
        log_dir=str(tmp_path),
    )
    records = {r.task_id: r for r in read_log(Path(str(log.location)))}
    assert (records["paris"].reward, records["paris"].outcome) == (1.0, "solved")
    assert (records["rome"].reward, records["rome"].outcome) == (0.0, "failed")
    paris = records["paris"]
    assert (paris.question, paris.model, paris.input_tokens, paris.output_tokens) == (
        "Capital of France?",
        "mockllm/model",
        7,
        2,
    )
    assert [(s.kind, s.thought) for s in paris.steps] == [("message", "Paris")]
    assert paris.env.endswith("task") and paris.context["scorer"] == "match"

"""The ``intercode`` Inspect task against our runner, on the real engine and real envs.

The gold through Inspect (its CLI, its ``.eval`` log read back) scores as our ``gold`` command does,
task by task, parts included; an agent through Inspect's model (``mockllm/model`` with scripted tool
calls, the only thing faked) leaves the same record as our runner's ``tool_calling`` strategy given
the same replies, in both reward modes; the log carries no gold, test or set-up text.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval_async
from inspect_ai.log import EvalLog, read_eval_log
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from langchain_core.messages import AIMessage

from intercode_agents.datasets import get_task
from intercode_agents.integrations.inspect.scorer import RECORD_KEY
from intercode_agents.integrations.inspect.tasks import intercode
from intercode_agents.models.scripted import ScriptedChatModel
from intercode_agents.runner.config import EvalConfig
from intercode_agents.runner.eval import run_eval
from intercode_agents.runner.gold import run_gold
from intercode_agents.strategies.episode import FORCED_SUBMIT
from intercode_agents.trajectory import Trajectory

#: A sample of each family: the project's small tasks (one that writes files among Bash's) and the
#: InterCode data's own.
GOLD_SAMPLES = {
    "bash": ["bash/mini/0", "bash/mini/4", "bash/mini/7", "bash/fs1/0", "bash/test/3"],
    "sql": ["sql/mini/0", "sql/mini/3", "sql/spider/0", "sql/spider/200"],
    "python": ["python/mini/0", "python/mbpp/11", "python/mbpp/596"],
    "ctf": ["ctf/mini/0", "ctf/mini/2", "ctf/0"],
}


def _inspect(cli: tuple[Path, dict[str, str]], args: list[str], log_dir: Path) -> EvalLog:
    command, env = cli
    done = subprocess.run(
        [
            str(command),
            "eval",
            "intercode_agents/intercode",
            *args,
            "--model",
            "mockllm/model",
            "--log-dir",
            str(log_dir),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (path,) = log_dir.glob("*.eval")
    return read_eval_log(str(path))


@pytest.mark.parametrize("env", sorted(GOLD_SAMPLES))
async def test_the_gold_through_inspects_cli_scores_as_our_gold_command(
    env: str, inspect_cli: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    tasks = GOLD_SAMPLES[env]
    args = ["-T", f"env={env}", "-T", f"tasks=[{', '.join(tasks)}]", "-T", "solver=gold"]
    log = await asyncio.to_thread(_inspect, inspect_cli, args, tmp_path)  # (its reader: off the loop)
    assert log.status == "success" and log.eval.task == "intercode_agents/intercode"
    assert log.eval.task_args_passed == {"env": env, "tasks": tasks, "solver": "gold"}
    report = await run_gold(EvalConfig(env=env, selector=",".join(tasks), concurrency=2, progress=False))
    ours = {r.task_id: r for r in [*report.solved, *report.failed, *report.corrupt]}
    assert sorted(ours) == sorted(tasks) and log.samples is not None and len(log.samples) == len(tasks)
    for sample in log.samples:
        (score,) = sample.scores.values()  # type: ignore[union-attr]
        record = Trajectory.model_validate(sample.store[RECORD_KEY])
        mine = ours[str(sample.id)]
        assert (record.outcome, record.reward, record.reward_parts) == (mine.outcome, mine.reward, mine.parts)
        assert score.metadata is not None and score.metadata["reward_parts"] == mine.parts
        assert score.value == {"reward": 1.0, "solved": 1.0, "scored": 1.0}, (sample.id, mine)
        assert (record.strategy, record.model) == ("direct", "gold")
    metrics = log.results.scores[0].metrics  # type: ignore[union-attr]
    assert (metrics["reward"].value, metrics["solved"].value, metrics["unscored"].value) == (1.0, 1.0, 0.0)


# -- an agent: the same replies through Inspect's model and through our runner's tool_calling --------

Item = tuple[str, str, dict[str, Any]] | str  # (thought, tool, arguments), or a reply without a tool call


def _scripts() -> dict[str, tuple[int, list[Item], dict[str, str]]]:
    """Per task: the turn budget, the model's replies, and the outcome in each reward mode."""
    python_gold = get_task("python/mini/0").gold
    return {
        # writes half the gold's changes, says something without a tool call, calls a tool that does
        # not exist, then submits
        "bash/mini/4": (
            10,
            [
                ("make the folder", "run_bash", {"command": "mkdir -p /testbed/backup"}),
                "Let me think about which notes to copy.",
                ("perl might help", "run_perl", {"command": "print 1"}),
                ("copy one", "run_bash", {"command": "cp /testbed/notes/todo.txt /testbed/backup/"}),
                ("done", "submit", {}),
            ],
            {"intercode": "solved", "strict": "failed"},  # (the paper's maths give free content points)
        ),
        # never submits: the turns run out and the episode is submitted as it stands
        "bash/mini/0": (
            2,
            [
                ("look", "run_bash", {"command": "ls -la /testbed/logs"}),
                ("count", "run_bash", {"command": "grep -c WARN /testbed/logs/app.log; false"}),
            ],
            {"intercode": "failed", "strict": "failed"},
        ),
        "sql/mini/1": (
            10,
            [
                ("a first try", "run_sql", {"query": "SELECT name FROM member WHERE city = 'Leeds'"}),
                ("a bad one", "run_sql", {"query": "SELECT nme FROM member"}),
                (
                    "the right one",
                    "run_sql",
                    {"query": "SELECT name FROM member WHERE city='Leeds' AND joined_year>2020"},
                ),
                ("submit it", "submit", {}),
            ],
            {"intercode": "solved", "strict": "solved"},
        ),
        "python/mini/0": (
            10,
            [
                (
                    "a wrong one first",
                    "run_python",
                    {"code": "def second_largest(nums):\n    return max(nums)"},
                ),
                ("now the right one", "run_python", {"code": python_gold}),
                ("try it", "run_python", {"code": "second_largest([4, 1, 7, 7, 3])"}),
                ("submit", "submit", {"answer": "second_largest"}),
            ],
            {"intercode": "solved", "strict": "solved"},
        ),
        "ctf/mini/0": (
            10,
            [
                ("read it", "run_bash", {"command": "cat message.txt"}),
                ("guess", "submit", {"answer": "picoCTF{not_the_flag}"}),
            ],
            {"intercode": "failed", "strict": "failed"},
        ),
    }


def _as_output(item: Item, n: int) -> ModelOutput:
    if isinstance(item, str):
        output = ModelOutput.from_content("mockllm/model", item)
    else:
        thought, tool, args = item
        output = ModelOutput.for_tool_call(
            "mockllm/model", tool, args, tool_call_id=f"call_{n}", content=thought
        )
    output.usage = ModelUsage(input_tokens=100 + n, output_tokens=10 + n, total_tokens=110 + 2 * n)
    return output


def _as_message(item: Item, n: int) -> AIMessage:
    usage = {"input_tokens": 100 + n, "output_tokens": 10 + n, "total_tokens": 110 + 2 * n}
    if isinstance(item, str):
        return AIMessage(content=item, usage_metadata=usage)  # type: ignore[arg-type]
    thought, tool, args = item
    calls = [{"name": tool, "args": args, "id": f"call_{n}"}]
    return AIMessage(content=thought, tool_calls=calls, usage_metadata=usage)  # type: ignore[arg-type]


STEP_FIELDS = (
    "turn", "kind", "action", "observation", "exit_code", "errored", "reward", "thought", "input_tokens",
    "output_tokens", "observation_truncated", "output_truncated", "timed_out", "task_files",
)  # fmt: skip


def _comparable(record: Trajectory) -> dict[str, Any]:
    context = {k: v for k, v in record.context.items() if k != "harness"}
    steps = [{name: getattr(step, name) for name in STEP_FIELDS} for step in record.steps]
    fields = ("task_id", "env", "question", "group", "reward", "reward_parts", "outcome", "reward_mode")
    fields += ("input_tokens", "output_tokens")
    return {name: getattr(record, name) for name in fields} | {"context": context, "steps": steps}


@pytest.mark.parametrize("mode", ["intercode", "strict"])
@pytest.mark.parametrize("task_id", sorted(_scripts()))
async def test_an_agent_through_inspect_leaves_our_runners_record(
    task_id: str, mode: str, tmp_path: Path
) -> None:
    turns, script, expected = _scripts()[task_id]
    env = task_id.split("/")[0]
    ours = await run_eval(
        EvalConfig(
            env=env,
            strategy="tool_calling",
            model=ScriptedChatModel([_as_message(item, n) for n, item in enumerate(script)]),
            selector=task_id,
            reward=mode,
            turns=turns,
            out_dir=tmp_path / "ours",
            progress=False,
        )
    )
    (mine,) = ours.records
    outputs = [_as_output(item, n) for n, item in enumerate(script)]
    (log,) = await eval_async(
        intercode(env=env, tasks=task_id, reward=mode, turns=turns),
        model=get_model("mockllm/model", custom_outputs=outputs),
        log_dir=str(tmp_path / "inspect"),
    )
    assert log.status == "success", log.error
    (sample,) = (await asyncio.to_thread(read_eval_log, str(log.location))).samples or []
    theirs = Trajectory.model_validate(sample.store[RECORD_KEY])
    assert _comparable(theirs) == _comparable(mine)
    assert mine.outcome == expected[mode], (mine.outcome, mine.reward)
    assert (theirs.strategy, theirs.model) == ("inspect/tool_calling", "mockllm/model")
    # what the model read after each call is our tool's text (the record's observation of that step)
    tool_texts = [m.text for m in sample.messages if m.role == "tool"]
    answered = [
        s
        for s in theirs.steps
        if s.thought != FORCED_SUBMIT and not s.observation.startswith("Please continue")
    ]
    assert tool_texts == [s.observation for s in answered]
    (score,) = sample.scores.values()  # type: ignore[union-attr]
    assert score.value["reward"] == mine.reward and score.metadata["reward_parts"] == mine.reward_parts  # type: ignore[index]


def _secrets(task_id: str) -> list[str]:
    task = get_task(task_id)
    texts = [task.gold, *task.meta.get("tests", []), task.meta.get("test_setup_code") or ""]
    return [t for t in texts if len(t.strip()) >= 12]


async def test_the_log_carries_no_gold_test_or_set_up_text(tmp_path: Path) -> None:
    tasks = ["python/mini/0", "python/mini/1"]
    outputs = [_as_output(("nothing to do", "submit", {"answer": "f"}), 0)] * len(tasks)
    (log,) = await eval_async(
        intercode(env="python", tasks=tasks),
        model=get_model("mockllm/model", custom_outputs=outputs),
        log_dir=str(tmp_path),
    )
    assert log.status == "success"
    with zipfile.ZipFile(str(log.location)) as archive:
        text = "\n".join(archive.read(name).decode("utf-8", "replace") for name in archive.namelist())
    secrets = [s for task in tasks for s in _secrets(task)]
    assert len(secrets) >= 6
    for secret in secrets:
        assert json.dumps(secret)[1:-1] not in text and secret not in text, secret
    sample = (await asyncio.to_thread(read_eval_log, str(log.location))).samples[0]  # type: ignore[index]
    assert set(sample.metadata) == {"task_id", "env", "split", "group", "fields"}
    assert sample.metadata["fields"] == {"entry_point": "second_largest"}

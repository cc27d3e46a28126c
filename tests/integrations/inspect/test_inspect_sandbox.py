"""The ``intercode`` sandbox provider: Inspect's own self-check, our isolation, other tasks' use of it.

Inspect ships the checks a sandbox provider should pass (``inspect_ai.util._sandbox.self_check``, a
private module: the extra pins inspect-ai below its next minor). They run here against a live Bash
sandbox of the provider; the ones that cannot hold by design are expected to fail, with the reason.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import aiodocker
import pytest
from inspect_ai import Task, eval_async
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import Score, Target, mean, scorer
from inspect_ai.solver import TaskState, generate, use_tools
from inspect_ai.tool import bash
from inspect_ai.util import SandboxEnvironment, SandboxUnavailableError, sandbox
from inspect_ai.util._sandbox.self_check import *  # noqa: F403 - Inspect's checks, collected as tests here

from intercode_agents.integrations.inspect.sandbox import IntercodeSandbox, IntercodeSandboxConfig, _idle
from intercode_agents.integrations.inspect.scorer import RECORD_KEY
from intercode_agents.integrations.inspect.tasks import intercode
from intercode_agents.integrations.inspect.tools import intercode_tools
from intercode_agents.trajectory import Trajectory

#: Inspect's checks that cannot pass here, and why (docs/INTEROP.md says the same).
NOT_APPLICABLE = {
    "test_read_file_not_allowed": "files are read through the engine (as docker cp reads them), never by a "
    "program the agent could have replaced, so mode bits do not stop the read",
    "test_write_text_file_without_permissions": "files are written through the engine, as root: mode bits "
    "do not stop the write",
    "test_write_binary_file_without_permissions": "files are written through the engine, as root: mode bits "
    "do not stop the write",
}

BASH = IntercodeSandboxConfig(env="bash")


@pytest.fixture
async def sandbox_env(request: pytest.FixtureRequest) -> AsyncIterator[SandboxEnvironment]:
    """A live Bash sandbox of the provider (no task), as an Inspect task using ``sandbox="intercode"``
    gets one; Inspect's checks run against it."""
    if request.node.originalname in NOT_APPLICABLE:
        request.node.add_marker(
            pytest.mark.xfail(reason=NOT_APPLICABLE[request.node.originalname], strict=True)
        )
    environments = await IntercodeSandbox.sample_init("self-check", BASH, {})
    yield environments["default"]
    await IntercodeSandbox.sample_cleanup("self-check", BASH, environments, False)


@pytest.fixture(scope="module", autouse=True)
async def _close_the_shelf() -> AsyncIterator[None]:
    yield
    await IntercodeSandbox.task_cleanup("self-check", BASH, True)


async def _removed_soon(container_id: str, within_s: float = 30.0) -> bool:
    """Whether the container is gone within ``within_s`` (the pool removes a used sandbox in the
    background, while the sample's replacement starts)."""
    deadline = asyncio.get_running_loop().time() + within_s
    async with aiodocker.Docker() as docker:
        while asyncio.get_running_loop().time() < deadline:
            try:
                await docker.containers.get(container_id)
            except aiodocker.DockerError as exc:
                if exc.status == 404:
                    return True
                raise
            await asyncio.sleep(0.2)
    return False


async def test_every_sample_gets_a_sandbox_nobody_used_and_it_is_removed_after() -> None:
    config = IntercodeSandboxConfig(env="bash")
    seen: list[str] = []
    for n in range(2):
        environments = await IntercodeSandbox.sample_init("isolation", config, {"task_id": "bash/mini/0"})
        box = environments["default"].as_type(IntercodeSandbox)
        assert box.episode is not None and box.episode.question.startswith("Count the lines")
        sb = box.env.sandbox  # type: ignore[attr-defined]
        seen.append(sb.id)
        left = await box.exec(["sh", "-c", "cat /tmp/planted 2>/dev/null; echo $$ > /tmp/planted"])
        assert left.stdout == "", f"sample {n} saw what an earlier one left: {left.stdout!r}"
        await IntercodeSandbox.sample_cleanup("isolation", config, environments, False)
        assert await _removed_soon(sb.id), "the sample's sandbox outlived the sample"
    assert seen[0] != seen[1]
    await IntercodeSandbox.task_cleanup("isolation", config, True)


async def test_the_sql_sandbox_runs_no_commands_but_its_tools_play() -> None:
    config = IntercodeSandboxConfig(env="sql")
    environments = await IntercodeSandbox.sample_init("sql", config, {"task_id": "sql/mini/0"})
    box = environments["default"]
    try:
        with pytest.raises(SandboxUnavailableError, match="run_sql"):
            await box.exec(["ls"])
        with pytest.raises(SandboxUnavailableError):
            await box.read_file("/etc/passwd")
    finally:
        await IntercodeSandbox.sample_cleanup("sql", config, environments, False)
        await IntercodeSandbox.task_cleanup("sql", config, True)


def _calls(*calls: tuple[str, dict[str, str]]) -> list[ModelOutput]:
    outputs = []
    for n, (tool, args) in enumerate(calls):
        output = ModelOutput.for_tool_call("mockllm/model", tool, args, tool_call_id=f"c{n}")
        output.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
        outputs.append(output)
    last = ModelOutput.from_content("mockllm/model", "done")
    last.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
    return [*outputs, last]


async def test_another_agent_with_our_tools_is_held_to_the_turn_budget(tmp_path: Path) -> None:
    """Inspect's own tool loop (``generate`` with tools) given our tools: the third call of a two-turn
    budget is not run, and the episode not submitted is submitted as it stands by our scorer."""
    ours = intercode(env="bash", tasks="bash/mini/7")  # the gold removes /testbed/logs/archive/*.log
    task = Task(
        dataset=ours.dataset,
        solver=[use_tools(intercode_tools("bash", turns=2)), generate()],
        scorer=ours.scorer,
        sandbox=ours.sandbox,
    )
    outputs = _calls(
        ("run_bash", {"command": "ls /testbed/logs/archive"}),
        ("run_bash", {"command": "rm /testbed/logs/archive/old.log"}),
        ("run_bash", {"command": "rm -r /testbed/logs/archive"}),
    )
    (log,) = await eval_async(
        task, model=get_model("mockllm/model", custom_outputs=outputs), log_dir=str(tmp_path)
    )
    assert log.status == "success", log.error
    (sample,) = await asyncio.to_thread(lambda: log.samples or [])  # (loaded off the loop)
    record = Trajectory.model_validate(sample.store[RECORD_KEY])
    assert [s.kind for s in record.steps] == ["action", "action", "invalid", "submit"]
    assert record.steps[2].observation == "not run: the turn budget is spent"
    assert record.steps[3].thought is not None and "submitted as it stands" in record.steps[3].thought
    assert (record.strategy, record.model) == ("inspect/agent", "mockllm/model")
    tool_errors = [m for m in sample.messages if m.role == "tool" and m.error is not None]  # type: ignore[union-attr]
    assert [m.error.message for m in tool_errors] == ["not run: the turn budget is spent"]  # type: ignore[union-attr]


@scorer(metrics=[mean()])
def _file_says_hello() -> object:
    async def score(state: TaskState, target: Target) -> Score:
        text = await sandbox().read_file("/tmp/hello.txt")
        return Score(value=1.0 if text == "hello from inspect\n" else 0.0, answer=text)

    return score


async def test_another_inspect_task_runs_inspects_own_bash_tool_in_our_sandbox(tmp_path: Path) -> None:
    task = Task(
        dataset=[Sample(input="Write hello to /tmp/hello.txt.", id="hello")],
        solver=[use_tools(bash(timeout=30)), generate()],
        scorer=_file_says_hello(),
        sandbox=("intercode", "bash"),
    )
    outputs = _calls(
        ("bash", {"command": "echo 'hello from inspect' > /tmp/hello.txt; id -un; ls /sys/class/net"})
    )
    (log,) = await eval_async(
        task, model=get_model("mockllm/model", custom_outputs=outputs), log_dir=str(tmp_path)
    )
    assert log.status == "success", log.error
    (sample,) = await asyncio.to_thread(lambda: log.samples or [])  # (loaded off the loop)
    (score,) = sample.scores.values()  # type: ignore[union-attr]
    assert score.value == 1.0
    tool = next(m for m in sample.messages if m.role == "tool")
    assert tool.text.splitlines()[0] == "root"
    assert tool.text.splitlines()[1:] == ["lo"]  # the loopback only: no network in our sandboxes
    # Inspect's final clean-up (task name "shutdown") closed every env the eval made: none is kept
    # idle, holding the process's shared pools open for the tests after this one.
    assert not any(_idle.get(asyncio.get_running_loop(), {}).values())

"""--agent: a user's LangChain agent played through the runner on the real engine and real envs.

The agents are real Runnables (``create_agent`` graphs, chains, coroutines) over scripted models
(tests/agent_fixtures.py). Each test says what the harness must hold whatever the agent does.
"""

from __future__ import annotations

import os
import time
import warnings
from pathlib import Path

import pytest

from intercode_agents.envs.bash.env import BashEnv
from intercode_agents.errors import ConfigError
from intercode_agents.metrics.failure_modes import failure_tags
from intercode_agents.runner.config import EpisodeBudgets, EvalConfig
from intercode_agents.runner.direct import replayable_actions
from intercode_agents.runner.eval import run_eval
from intercode_agents.runner.run_dir import read_records
from intercode_agents.strategies.agent_episode import NOT_RUN, TURNS_SPENT
from intercode_agents.trajectory import Trajectory
from tests import ROOT, agent_fixtures
from tests.cli.test_cli_run_commands import cli

os.environ.setdefault("INTERCODE_DATA", "/work/shared/intercode-data")
FIXTURES = str(Path(agent_fixtures.__file__))
EXAMPLE = str(ROOT / "examples" / "own_agent.py")


async def play(tmp_path: Path, agent: str, task: str = "bash/mini/0", **settings: object) -> Trajectory:
    result = await run_eval(
        EvalConfig(
            env=task.split("/")[0],
            agent=agent,
            model=settings.pop("model", None),
            selector=task,
            out_dir=tmp_path / "run",
            progress=False,
            **settings,
        )
    )
    (traj,) = result.records
    return traj


def test_the_example_agent_solves_bash_mini_0_offline_and_every_call_is_a_step(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = cli(["eval", "bash", "--agent", f"{EXAMPLE}:build", "--tasks", "bash/mini/0", "--out", str(out)])
    assert result.returncode == 0, result.stderr
    assert "100.0% (1 of 1 scored)" in result.stdout
    assert f"intercode-agents view {out}" in result.stdout and "report:" in result.stdout
    (traj,) = read_records(out / "trajectories.jsonl")[0]
    assert (traj.strategy, traj.model, traj.outcome, traj.reward) == (
        "agent:own_agent:build",
        "agent-default",
        "solved",
        1.0,
    )
    assert [(s.kind, s.action) for s in traj.steps] == [
        ("action", "ls /testbed/logs"),
        ("action", "grep -c ERROR /testbed/logs/app.log"),
        ("submit", "submit"),
    ]
    first, second, _ = traj.steps
    assert first.thought == "Let me see which logs there are." and first.observation == "app.log\narchive\n"
    assert second.thought == "Now count the lines." and second.exit_code == 0 and second.observation == "2\n"
    assert traj.context["agent_stop"] == "the episode is submitted" and traj.context["model_calls_seen"] == 3


async def test_an_agents_record_replays_to_the_same_reward_without_its_messages(tmp_path: Path) -> None:
    traj = await play(tmp_path, f"{FIXTURES}:never_submits")
    assert [s.kind for s in traj.steps] == ["action", "message", "submit"]
    assert replayable_actions(traj) == ["grep -c ERROR /testbed/logs/app.log", "submit"]
    replayed = cli(["replay", str(tmp_path / "run"), "--json"])
    assert replayed.returncode == 0, replayed.stderr  # no reward changed: the message was not run


async def test_the_turn_budget_counts_tool_calls_stops_the_agent_and_submits(tmp_path: Path) -> None:
    started = time.perf_counter()
    traj = await play(tmp_path, f"{FIXTURES}:looping", turns=3)
    assert time.perf_counter() - started < 60
    kinds = [s.kind for s in traj.steps]
    assert kinds == ["action", "action", "action", "submit"]
    assert traj.steps[-1].thought.startswith("the turn budget is spent")
    assert traj.context["agent_stop"] == TURNS_SPENT
    assert traj.outcome == "failed" and traj.reward is not None  # submitted and scored, `ls` is no answer
    assert traj.context["model_calls_seen"] <= 4  # stopped at once, not left to loop


async def test_calls_past_the_budget_never_reach_the_env_even_if_the_agent_ignores_the_answers(
    tmp_path: Path,
) -> None:
    traj = await play(tmp_path, f"{FIXTURES}:direct_caller", turns=4)
    actions = [s for s in traj.steps if s.kind == "action"]
    assert [s.action for s in actions] == ["echo 0", "echo 1", "echo 2", "echo 3"]
    refused = [s for s in traj.steps if s.kind == "invalid"]
    assert all(s.observation.startswith(NOT_RUN.format(why="")) for s in refused)
    assert traj.steps[-1].kind == "submit"


async def test_an_agent_that_swallows_its_cancellation_is_left_and_its_calls_refused(tmp_path: Path) -> None:
    started = time.perf_counter()
    # loaded by module name, so that this test sees the module's record of what the agent got
    traj = await play(
        tmp_path, "tests.agent_fixtures:stubborn", turns=2, strategy_settings={"stop_grace_s": 0.5}
    )
    assert time.perf_counter() - started < 60
    assert [s.action for s in traj.steps if s.kind == "action"] == ["echo 0", "echo 1"]
    assert traj.steps[-1].kind == "submit" and traj.outcome == "failed"
    assert "cancelled" in agent_fixtures.STUBBORN_CALLS  # it really did swallow the cancellation


async def test_an_agent_that_ends_without_submitting_is_submitted_by_the_runner(tmp_path: Path) -> None:
    traj = await play(tmp_path, f"{FIXTURES}:never_submits")
    assert [s.kind for s in traj.steps] == ["action", "message", "submit"]
    assert traj.steps[1].thought == "There are 2 ERROR lines."
    assert traj.steps[2].thought.startswith("the agent ended without submitting")
    assert traj.outcome == "solved"  # its last output was the answer


async def test_an_async_factory_is_awaited(tmp_path: Path) -> None:
    traj = await play(tmp_path, f"{FIXTURES}:built_async")
    assert traj.outcome == "solved"


async def test_the_recursion_limit_ends_an_agent_that_never_reaches_a_tool(tmp_path: Path) -> None:
    traj = await play(tmp_path, f"{FIXTURES}:unknown_tool_forever", turns=3)
    assert traj.context["recursion_limit_reached"] is True and traj.context["recursion_limit"] == 19
    messages = [s for s in traj.steps if s.kind == "message"]
    assert messages and all(s.action.startswith("run_bsh(") for s in messages)
    assert traj.steps[-1].kind == "submit" and "recursion limit" in traj.steps[-1].thought


async def test_the_wall_clock_limit_times_out_an_agent_that_hangs(tmp_path: Path) -> None:
    started = time.perf_counter()
    traj = await play(tmp_path, f"{FIXTURES}:sleeper", budgets=EpisodeBudgets(max_seconds=2))
    assert time.perf_counter() - started < 60
    assert traj.outcome == "timeout" and traj.reward is None


async def test_the_token_budget_stops_the_agent_with_its_own_outcome(tmp_path: Path) -> None:
    traj = await play(tmp_path, f"{FIXTURES}:looping", turns=20, budgets=EpisodeBudgets(max_tokens=1500))
    assert traj.outcome == "tokens_exhausted" and traj.reward is None
    assert traj.input_tokens + traj.output_tokens == 1800  # three replies of 600: the third crossed
    assert len([s for s in traj.steps if s.kind == "action"]) == 3
    assert "1,800 of its 1,500 tokens" in (traj.error or "")


async def test_each_step_keeps_the_tokens_of_the_reply_that_made_its_call(tmp_path: Path) -> None:
    traj = await play(tmp_path, f"{FIXTURES}:looping", turns=3)
    actions = [s for s in traj.steps if s.kind == "action"]
    assert [(s.input_tokens, s.output_tokens) for s in actions] == [(400, 200)] * 3
    assert sum(s.input_tokens + s.output_tokens for s in traj.steps) == traj.input_tokens + traj.output_tokens


async def test_the_cost_budget_stops_the_agent_with_its_own_outcome(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text("as_of: test\nmodels:\n  looper: {input: 1000.0, output: 1000.0}\n")
    monkeypatch.setenv("INTERCODE_AGENTS_PRICES", str(prices))
    traj = await play(
        tmp_path,
        f"{FIXTURES}:with_given_model",
        model=f"{FIXTURES}:looper",
        turns=20,
        budgets=EpisodeBudgets(max_cost_usd=1.0),
    )
    # 600 tokens at $1000 per 1M tokens = $0.60 a reply: the second reply crosses $1
    assert traj.outcome == "cost_exhausted" and traj.model == "scripted:looper"
    assert len([s for s in traj.steps if s.kind == "action"]) == 2


async def test_a_cost_budget_needs_a_known_price(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text("as_of: test\nmodels:\n  gpt-4o: {input: 2.5, output: 10.0}\n")
    monkeypatch.setenv("INTERCODE_AGENTS_PRICES", str(prices))
    with pytest.raises(ConfigError, match="price table does not know"):
        await play(
            tmp_path,
            f"{FIXTURES}:with_given_model",
            model=f"{FIXTURES}:looper",
            budgets=EpisodeBudgets(max_cost_usd=1.0),
        )


async def test_the_model_reads_what_is_left_when_asked(tmp_path: Path) -> None:
    traj = await play(
        tmp_path,
        f"{FIXTURES}:looping",
        turns=2,
        budgets=EpisodeBudgets(max_tokens=100_000, max_seconds=300, show=True),
    )
    first = traj.steps[0].observation
    assert "[budget left: 1 turn, 99,400 tokens," in first and " s]" in first


async def test_a_crash_of_the_agent_is_its_failure_named_with_its_file_and_line(tmp_path: Path) -> None:
    traj = await play(tmp_path, f"{FIXTURES}:crashes")
    assert traj.outcome == "failed" and traj.reward is not None
    assert "KeyError" in traj.context["agent_error"] and f"{FIXTURES}:" in traj.context["agent_error"]
    assert failure_tags(traj) == ["premature_submit", "agent_crashed"]


async def test_an_error_of_the_agents_own_is_never_taken_for_a_provider_failure(tmp_path: Path) -> None:
    """A TimeoutError looks transient, but only a failure a model call raised may exclude an episode."""
    traj = await play(tmp_path, f"{FIXTURES}:own_deadline", retry_errors=0)
    assert traj.outcome == "failed" and "TimeoutError" in traj.context["agent_error"]
    assert "agent_crashed" in failure_tags(traj)


async def test_a_failing_model_is_a_model_error_and_a_full_context_is_the_agents_limit(
    tmp_path: Path,
) -> None:
    failed = await play(tmp_path / "a", f"{FIXTURES}:failing_model", retry_errors=0)
    assert failed.outcome == "model_error" and "invalid api key" in (failed.error or "")
    full = await play(tmp_path / "b", f"{FIXTURES}:full_context")
    assert full.outcome == "failed" and full.context["context_exhausted"] is True
    assert "context_exhausted" in failure_tags(full)


async def test_an_env_failure_during_a_tool_call_is_an_env_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(env: BashEnv, action: str) -> object:
        raise RuntimeError("injected engine fault")

    monkeypatch.setattr(BashEnv, "_execute", broken)
    traj = await play(tmp_path, f"{EXAMPLE}:build", retry_errors=0)
    assert traj.outcome == "env_error" and "injected engine fault" in (traj.error or "")


async def test_a_chain_that_calls_no_tool_is_recorded_and_submitted(tmp_path: Path) -> None:
    traj = await play(tmp_path, f"{FIXTURES}:chain_of_one_call")
    assert [s.kind for s in traj.steps] == ["message", "submit"]
    assert traj.steps[0].action == 'run_bash({"command": "ls"})' and traj.steps[0].thought == "I would run ls"


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("tests/nope.py:build", "the file tests/nope.py does not exist"),
        (f"{FIXTURES}:absent", "has no 'absent'; it defines"),
        (f"{FIXTURES}:wrong_signature", "must take (tools, model, task)"),
        (f"{FIXTURES}:broken_at_build", "raised RuntimeError: cannot build the agent (at "),
        (f"{FIXTURES}:not_a_runnable", "returned a dict, not a Runnable"),
        ("no_such_module.agents:build", "cannot import module 'no_such_module.agents'"),
        ("build", "write PATH.py:NAME"),
    ],
)
async def test_factory_errors_are_config_errors_naming_the_file(
    tmp_path: Path, ref: str, message: str
) -> None:
    with pytest.raises(ConfigError, match="agent factory") as info:
        await play(tmp_path, ref)
    assert message in str(info.value)
    if ref.startswith(FIXTURES) and "signature" not in ref:
        assert FIXTURES in str(info.value)


def test_a_syntax_error_names_the_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad_agent.py"
    bad.write_text("def build(tools, model, task):\n    return (\n")
    result = cli(
        ["eval", "bash", "--agent", f"{bad}:build", "--tasks", "bash/mini/0", "--out", str(tmp_path / "r")]
    )
    assert result.returncode == 2
    assert f"{bad}:2: syntax error" in " ".join(result.stderr.split()) and "Traceback" not in result.stderr


def _reachable(roots: list[object], depth: int = 8) -> list[object]:
    """Every object reachable from ``roots`` through public attributes (no leading underscore),
    pydantic fields, and the items of lists, tuples and dicts."""
    seen: dict[int, object] = {}
    frontier = list(roots)
    for _ in range(depth):
        following: list[object] = []
        for obj in frontier:
            if id(obj) in seen or isinstance(obj, str | bytes | int | float | type(None) | type):
                continue
            seen[id(obj)] = obj
            if isinstance(obj, list | tuple | set | frozenset):
                following += list(obj)
            elif isinstance(obj, dict):
                following += [*obj.keys(), *obj.values()]
            else:
                names = [n for n in dir(type(obj)) if not n.startswith("_")]
                names += [n for n in getattr(obj, "__dict__", {}) if not n.startswith("_")]
                for name in set(names):
                    try:
                        with warnings.catch_warnings():  # (pydantic's deprecated instance attributes)
                            warnings.simplefilter("ignore")
                            value = getattr(obj, name)
                    except Exception:
                        continue
                    if not callable(value) or hasattr(value, "__dict__"):
                        following.append(value)
        frontier = following
    return list(seen.values())


async def test_an_agent_is_given_a_public_view_of_its_task_and_tools_that_reach_no_answer(
    tmp_path: Path,
) -> None:
    from intercode_agents.datasets import PublicTask, Task
    from intercode_agents.envs import Env
    from intercode_agents.strategies import EpisodeRun
    from intercode_agents.strategies.agent_episode import AgentGate

    traj = await play(tmp_path, "tests.agent_fixtures:answer_peeker", task="python/mini/0")
    peeked = agent_fixtures.PEEKED
    assert peeked["gold"] is None
    assert traj.outcome == "failed" and traj.reward == 0.0  # it had to write its own function
    task = peeked["task"]
    assert isinstance(task, PublicTask)
    assert (task.id, task.env, task.split) == ("python/mini/0", "python", "mini")
    assert task.fields == {"entry_point": "second_largest"}
    assert not hasattr(task, "gold") and not hasattr(task, "meta")
    found = _reachable([peeked["tools"], peeked["model"], task])
    leaks = [type(o).__name__ for o in found if isinstance(o, Env | Task | AgentGate | EpisodeRun)]
    assert leaks == []

"""Runs with a user's strategy or model, several samples per task, several models side by side,
model settings and the run-wide cost cap: real engine, real envs, scripted models."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from intercode_agents.errors import ConfigError
from intercode_agents.models import LocalChatModel, resolve_model
from intercode_agents.runner.config import EvalConfig
from intercode_agents.runner.eval import run_eval
from intercode_agents.runner.run_dir import read_records
from intercode_agents.strategies import get_strategy
from tests import agent_fixtures
from tests.cli.test_cli_run_commands import cli

os.environ.setdefault("INTERCODE_DATA", "/work/shared/intercode-data")
FIXTURES = str(Path(agent_fixtures.__file__))


@pytest.mark.parametrize("ref", [f"{FIXTURES}:SecondLook", "tests.agent_fixtures:SecondLook"])
async def test_a_strategy_subclass_loads_by_path_or_module(tmp_path: Path, ref: str) -> None:
    result = await run_eval(
        EvalConfig(
            env="sql",
            strategy=ref,
            model=f"{FIXTURES}:oracle",
            selector="sql/mini/0,sql/mini/1",
            turns=2,
            out_dir=tmp_path / "run",
            progress=False,
        )
    )
    assert [t.strategy for t in result.records] == ["second_look"] * 2
    assert all(t.outcome == "solved" and t.model == "scripted:oracle" for t in result.records)
    assert json.loads((tmp_path / "run" / "run.json").read_text())["strategy"] == "second_look"


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        (f"{FIXTURES}:NotAStrategy", "is the class NotAStrategy, not a subclass of"),
        (f"{FIXTURES}:oracle", "is a function, not a subclass of"),
        (f"{FIXTURES}:NamedLikeReact", "named 'react' like a shipped strategy"),
        (f"{FIXTURES}:Absent", "has no 'Absent'"),
        ("tests.no_such_module:Class", "cannot import module 'tests.no_such_module'"),
    ],
)
def test_a_bad_strategy_reference_is_a_clear_error(ref: str, message: str) -> None:
    with pytest.raises(ConfigError, match="strategy") as info:
        get_strategy(ref)
    assert message in str(info.value)


async def test_epochs_record_their_seeds_and_give_the_hand_computed_pass_at_k(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = await run_eval(
        EvalConfig(
            env="sql",
            strategy="react",
            model=f"{FIXTURES}:coin",
            selector="sql/mini/0,sql/mini/1,sql/mini/2",
            epochs=3,
            turns=3,
            concurrency=3,
            out_dir=out,
            progress=False,
        )
    )
    records = {(t.task_id, t.epoch): t for t in result.records}
    assert len(records) == 9
    assert {(t.epoch, t.seed) for t in records.values()} == {(1, 0), (2, 1), (3, 2)}  # seed 0 by default
    assert all(t.model_settings.get("seed") == t.seed for t in records.values())  # the model got it
    # task i is solved when (seed + i) is even: task 0 in epochs 1 and 3, task 1 in 2, task 2 in 1 and 3
    solved = {key for key, t in records.items() if t.solved}
    assert solved == {
        ("sql/mini/0", 1),
        ("sql/mini/0", 3),
        ("sql/mini/1", 2),
        ("sql/mini/2", 1),
        ("sql/mini/2", 3),
    }
    block = result.summary["epochs"]
    # pass@1 = (2/3 + 1/3 + 2/3) / 3 = 5/9; pass@2 = (1 + (1 - C(2,2)/C(3,2)) + 1) / 3 = 8/9; pass@3 = 1
    assert block["pass_at_k"]["1"]["value"] == pytest.approx(5 / 9)
    assert block["pass_at_k"]["2"]["value"] == pytest.approx(8 / 9)
    assert block["pass_at_k"]["3"]["value"] == pytest.approx(1.0)
    assert block["spread"] == pytest.approx(
        {
            "always_solved": 0,
            "sometimes_solved": 3,
            "never_solved": 0,
            "mean_reward_std": block["spread"]["mean_reward_std"],
        }
    )
    # resume counts epochs: drop the last 4 records and only those 4 episodes are played again
    path = out / "trajectories.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:5]))
    kept = {(t.task_id, t.epoch) for t in read_records(path)[0]}
    again = await run_eval(
        EvalConfig(
            env="sql",
            strategy="react",
            model=f"{FIXTURES}:coin",
            selector="sql/mini/0,sql/mini/1,sql/mini/2",
            epochs=3,
            turns=3,
            out_dir=out,
            resume=True,
            progress=False,
        )
    )
    assert again.new_episodes == 4 and again.resumed_episodes == 5
    assert {(t.task_id, t.epoch) for t in again.records} == set(records)
    assert {(t.task_id, t.epoch) for t in read_records(path)[0]} - kept == set(records) - kept
    assert again.summary["epochs"]["pass_at_k"]["1"]["value"] == pytest.approx(5 / 9)


def test_several_models_run_side_by_side_into_a_directory_each_with_one_comparison(tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    args = ["eval", "sql", "-s", "react", "-m", f"{FIXTURES}:oracle", "-m", f"{FIXTURES}:clueless"]
    result = cli([*args, "--tasks", "sql/mini/0,sql/mini/1,sql/mini/2", "-c", "2", "--out", str(out)])
    assert result.returncode == 0, result.stderr
    dirs = sorted(p.name for p in out.iterdir() if p.is_dir())
    assert len(dirs) == 2 and all((out / d / "trajectories.jsonl").is_file() for d in dirs)
    by_model = {d: read_records(out / d / "trajectories.jsonl")[0] for d in dirs}
    oracle_dir = next(d for d in dirs if d.endswith("oracle"))
    assert all(t.solved for t in by_model[oracle_dir]) and len(by_model[oracle_dir]) == 3
    assert not any(t.solved for d, ts in by_model.items() if d != oracle_dir for t in ts)
    assert (out / "report.html").is_file()
    md = (out / "report.md").read_text()
    assert "0 solved only in B, 3 solved only in A" in md
    assert f"intercode-agents view {out}" in result.stdout
    with pytest.raises(ConfigError, match="given twice"):
        from intercode_agents.runner.several_models import model_dirs

        model_dirs(["local", "local"], out)


def test_model_settings_reach_the_provider_and_are_part_of_the_run(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["eval", "sql", "-s", "react", "-m", f"{FIXTURES}:settings_echo", "--tasks", "sql/mini/0"]
    args += ["--temperature", "0.3", "--max-output-tokens", "64", "-M", "top_p=0.9", "-M", 'stop=["x"]']
    result = cli([*args, "--out", str(out)])
    assert result.returncode == 0, result.stderr
    settings = json.loads((out / "run.json").read_text())
    assert settings["model_options"] == {"temperature": 0.3, "max_tokens": 64, "top_p": 0.9, "stop": ["x"]}
    # a resume with other settings is refused: they change what the records mean
    again = cli([*args[:-6], "--temperature", "0.5", "--out", str(out), "--resume"])
    assert again.returncode == 2 and "model_options" in again.stderr
    bad = cli(["eval", "sql", "-s", "react", "-m", "local", "-M", "nonsense", "--tasks", "sql/mini/0"])
    assert bad.returncode == 2 and "bad model setting 'nonsense'" in bad.stderr


async def test_model_settings_are_passed_to_the_model_maker(tmp_path: Path) -> None:
    agent_fixtures.SETTINGS_SEEN.clear()
    settings = {"temperature": 0.3, "max_tokens": 64, "top_p": 0.9}
    await run_eval(
        EvalConfig(
            env="sql",
            strategy="react",
            model="tests.agent_fixtures:settings_echo",
            model_settings=settings,
            selector="sql/mini/0",
            out_dir=tmp_path / "run",
            progress=False,
        )
    )
    assert agent_fixtures.SETTINGS_SEEN == [settings]


def test_local_model_settings() -> None:
    model = resolve_model("local", temperature=0.3, max_tokens=64, top_p=0.9)
    assert isinstance(model, LocalChatModel) and (model.temperature, model.max_tokens, model.top_p) == (
        0.3,
        64,
        0.9,
    )
    with pytest.raises(ConfigError, match="bad settings for the local model"):
        resolve_model("local", frequency_penalty=1.0)


async def test_the_run_cost_cap_stops_cleanly_and_a_resume_with_more_finishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text("as_of: test\nmodels:\n  looper: {input: 1000.0, output: 1000.0}\n")
    monkeypatch.setenv("INTERCODE_AGENTS_PRICES", str(prices))
    out = tmp_path / "run"
    common = {
        "agent": f"{FIXTURES}:with_given_model",
        "model": f"{FIXTURES}:looper",
        "selector": "bash/mini/0,bash/mini/1,bash/mini/2,bash/mini/3",
        "turns": 1,
        "out_dir": out,
        "progress": False,
    }
    # each episode makes one model call of 600 tokens at $1000 per 1M tokens: $0.60
    first = await run_eval(EvalConfig(env="bash", max_cost_usd=1.0, **common))  # type: ignore[arg-type]
    assert (
        first.new_episodes == 2
        and first.stopped
        and "cost cap of $1.0000 is reached ($1.2000 spent)" in first.stopped
    )
    assert first.summary["denominator"]["not_run"] == 2 and first.summary["stopped"] == first.stopped
    same = await run_eval(EvalConfig(env="bash", max_cost_usd=1.0, resume=True, **common))  # type: ignore[arg-type]
    assert same.new_episodes == 0 and same.stopped
    more = await run_eval(EvalConfig(env="bash", max_cost_usd=5.0, resume=True, **common))  # type: ignore[arg-type]
    assert more.new_episodes == 2 and more.stopped is None
    assert more.summary["denominator"]["not_run"] == 0 and len(more.records) == 4


async def test_a_cost_cap_needs_a_known_price(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text("as_of: test\nmodels:\n  gpt-4o: {input: 2.5, output: 10.0}\n")
    monkeypatch.setenv("INTERCODE_AGENTS_PRICES", str(prices))
    with pytest.raises(ConfigError, match="price table does not know"):
        await run_eval(
            EvalConfig(
                env="bash",
                agent=f"{FIXTURES}:with_given_model",
                model=f"{FIXTURES}:looper",
                selector="bash/mini/0",
                max_cost_usd=1.0,
                out_dir=tmp_path / "run",
                progress=False,
            )
        )

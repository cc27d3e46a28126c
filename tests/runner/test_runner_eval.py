"""The evaluation engine against real envs: records, summary, resume rules, preflight, replay."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

from intercode_agents.datasets import Task
from intercode_agents.errors import ConfigError, ImageMissing
from intercode_agents.metrics.summary import summarize
from intercode_agents.runner.config import EvalConfig
from intercode_agents.runner.eval import run_eval
from intercode_agents.runner.preflight import image_ids
from intercode_agents.runner.replay import replay_file
from intercode_agents.runner.run_dir import read_records

os.environ.setdefault("INTERCODE_DATA", "/work/shared/intercode-data")


async def test_gold_run_at_concurrency_4_records_each_task_once_and_summarizes_them(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = await run_eval(
        EvalConfig(
            env="sql", model="gold", selector="spider", limit=20, concurrency=4, out_dir=out, progress=False
        )
    )
    records, _ = read_records(out / "trajectories.jsonl")
    settings = json.loads((out / "run.json").read_text())
    ids = [r.task_id for r in records]
    assert sorted(ids) == sorted(settings["task_ids"]) and len(ids) == len(set(ids)) == 20
    assert result.new_episodes == 20 and result.resumed_episodes == 0

    summary = json.loads((out / "summary.json").read_text())
    assert summary == json.loads(json.dumps(summarize(records, planned=20)))
    assert summary["n_episodes"] == 20
    assert summary["n_solved"] == sum(r.outcome == "solved" for r in records)
    assert summary["outcomes"] == {**summary["outcomes"], **Counter(r.outcome for r in records)}
    for r in records:
        assert (r.env, r.strategy, r.model, r.reward_mode) == ("sql", "direct", "gold", "intercode")
        assert r.image_id and r.image_id.startswith("sha256:")
        assert r.steps and r.steps[-1].kind == "submit" and r.reward is not None
        assert r.group.get("db") and r.group.get("hardness")


@pytest.fixture(scope="module")
async def sql_gold_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sql-gold") / "run"
    await run_eval(
        EvalConfig(env="sql", model="gold", selector="mini", concurrency=2, out_dir=out, progress=False)
    )
    return out


async def test_existing_records_need_resume_and_resume_needs_equal_settings(sql_gold_run: Path) -> None:
    with pytest.raises(ConfigError, match="already holds records"):
        await run_eval(
            EvalConfig(env="sql", model="gold", selector="mini", out_dir=sql_gold_run, progress=False)
        )
    with pytest.raises(ConfigError, match=r"reward: 'intercode' -> 'strict'"):
        await run_eval(
            EvalConfig(
                env="sql", model="gold", selector="mini", reward="strict", out_dir=sql_gold_run, resume=True
            )
        )
    with pytest.raises(ConfigError, match="task selection"):
        await run_eval(
            EvalConfig(env="sql", model="gold", selector="mini", limit=2, out_dir=sql_gold_run, resume=True)
        )
    with pytest.raises(ConfigError, match="--out"):
        await run_eval(EvalConfig(env="sql", model="gold", selector="mini", resume=True))


async def test_resuming_a_finished_run_plays_nothing_and_writes_nothing(sql_gold_run: Path) -> None:
    before = (sql_gold_run / "trajectories.jsonl").read_bytes()
    result = await run_eval(
        EvalConfig(
            env="sql",
            model="gold",
            selector="mini",
            concurrency=2,
            out_dir=sql_gold_run,
            resume=True,
            progress=False,
        )
    )
    assert result.new_episodes == 0 and result.resumed_episodes == 6
    assert (sql_gold_run / "trajectories.jsonl").read_bytes() == before
    assert "resumed_at" in json.loads((sql_gold_run / "run.json").read_text())


async def test_replay_reproduces_gold_rewards_and_flags_a_tampered_record(
    sql_gold_run: Path, tmp_path: Path
) -> None:
    report = await replay_file(sql_gold_run / "trajectories.jsonl", concurrency=2, progress=False)
    assert len(report.episodes) == 6 and not report.changed and not report.skipped

    lines = (sql_gold_run / "trajectories.jsonl").read_text().splitlines()
    tampered = json.loads(lines[0])
    tampered["reward"] = 0.25
    broken = json.loads(lines[1])
    broken["outcome"], broken["reward"] = "env_error", None
    path = tmp_path / "tampered.jsonl"
    path.write_text("\n".join([json.dumps(tampered), json.dumps(broken), *lines[2:]]) + "\n")
    report = await replay_file(path, concurrency=2, progress=False)
    assert [e.task_id for e in report.changed] == [tampered["task_id"]]
    assert report.changed[0].recorded == 0.25 and report.changed[0].replayed == 1.0
    assert report.skipped == [(broken["task_id"], "no reward recorded (outcome env_error)")]


async def test_a_missing_image_is_one_clear_error() -> None:
    task = Task(
        id="bash/x/0", env="bash", split="x", query="q", gold="ls", image="no-such-image", group={}, meta={}
    )
    with pytest.raises(ImageMissing, match="intercode-agents/no-such-image:latest"):
        await image_ids([task])


async def test_episodes_played_on_given_envs_leave_them_open_with_warm_pools() -> None:
    from intercode_agents import make_env
    from intercode_agents.datasets import select_tasks
    from intercode_agents.runner.players import GoldPlayer
    from intercode_agents.runner.workers import Episode, run_episodes

    tasks = select_tasks("bash", "mini")[:4]  # read-only golds: every sandbox comes back pristine
    envs = [make_env("bash", facts_cache="process"), make_env("bash", facts_cache="process")]
    try:
        first = await run_episodes(
            "bash", [Episode(t) for t in tasks], GoldPlayer(), concurrency=2, envs=envs
        )
        pool = await envs[0].pool(tasks[0].image)
        assert pool is await envs[1].pool(tasks[0].image)
        await pool.drain()
        cold = pool.stats["cold_acquires"]
        # The pools are adaptive: they keep ready what the last run took at once (one per worker),
        # so each worker's first episode of the next run starts on a warm, never-used sandbox.
        second = await run_episodes(
            "bash", [Episode(t) for t in tasks[:2]], GoldPlayer(), concurrency=2, envs=envs
        )
        await pool.drain()
        assert [t.solved for t in first + second] == [True] * 6
        assert pool.stats["cold_acquires"] == cold  # every agent got a warm, never-used sandbox
    finally:
        for env in envs:
            await env.close()


async def test_resume_ignores_duplicate_and_foreign_records_and_plays_only_the_missing(
    tmp_path: Path,
) -> None:
    out = tmp_path / "run"
    await run_eval(
        EvalConfig(env="sql", model="gold", selector="mini", concurrency=2, out_dir=out, progress=False)
    )
    lines = (out / "trajectories.jsonl").read_text().splitlines()
    duplicate = json.loads(lines[0]) | {"outcome": "failed", "reward": 0.0}  # would lower the rate
    foreign_task = json.loads(lines[1]) | {"task_id": "sql/spider/1"}
    foreign_seed = json.loads(lines[2]) | {"seed": 99}
    extra = [json.dumps(r) for r in (duplicate, foreign_task, foreign_seed)]
    (out / "trajectories.jsonl").write_text("\n".join([*lines[:4], *extra]) + "\n")

    result = await run_eval(
        EvalConfig(
            env="sql", model="gold", selector="mini", concurrency=2, out_dir=out, resume=True, progress=False
        )
    )
    assert (result.new_episodes, result.resumed_episodes) == (2, 4)
    assert sorted(r.task_id for r in result.records) == [f"sql/mini/{n}" for n in range(6)]
    assert [(i.line, i.why) for i in result.ignored] == [
        (5, "a duplicate of the record on line 1"),
        (6, "task sql/spider/1 is not in the run"),
        (7, "seed 99 is not the run's seed for epoch 1 (None)"),
    ]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_episodes"] == 6 and summary["success_rate"] == 1.0
    assert [r["line"] for r in summary["ignored_records"]] == [5, 6, 7]
    assert len(read_records(out / "trajectories.jsonl")[0]) == 9  # nothing on disk is rewritten

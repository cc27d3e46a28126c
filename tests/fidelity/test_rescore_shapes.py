"""Re-scoring every shape of log the original wrote, on real slices of the paper's logs, in real sandboxes.

The slices are a few entries of the gpt-3.5 ReAct and Plan & Solve logs (read from the shared folder at
run time). Each must re-score to the logged rewards: the ReAct actions unwrapped (``execute[...]``) and
scored only at their submits, the Plan & Solve steps scored after each, and the fenced blocks that
reached the original's shell as text run again as text. Two hand-made logs cover the entries that cannot
be scored: one whose query the data changed since (the paper's CTF log names an old host), and one whose
gold needs the network.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from intercode_agents import make_env
from intercode_agents.datasets import get_task
from intercode_agents.fidelity.rescore import FileReport, rescore_file
from tests.cli.test_cli_run_commands import cli

RESULTS = Path(os.environ.get("INTERCODE_RESULTS", "/work/shared/intercode-results"))
SQL_REACT = RESULTS / "sql/gpt-3.5/ic_sql_react_10_turns.json"
SQL_PLAN = RESULTS / "sql/gpt-3.5/ic_sql_plan_solve.json"
FS1_REACT = RESULTS / "bash/gpt-3.5/ic_bash_react_10_turns_fs_1.json"
FS1_PLAN = RESULTS / "bash/gpt-3.5/ic_bash_plan_solve_fs_1.json"
FS3_PLAN = RESULTS / "bash/gpt-3.5/ic_bash_plan_solve_fs_3.json"
needs_logs = pytest.mark.skipif(not SQL_REACT.is_file(), reason="the paper's logs are not at " + str(RESULTS))


def _slice(source: Path, keys: list[str], tmp_path: Path) -> Path:
    data = json.loads(source.read_text())
    if "logs" in data:  # Plan & Solve's wrapper stays
        data = {"meta": data["meta"], "logs": {k: data["logs"][k] for k in keys}}
    else:
        data = {k: data[k] for k in keys}
    path = tmp_path / source.name
    path.write_text(json.dumps(data))
    return path


async def _rescore(path: Path, **options: Any) -> FileReport:
    return await rescore_file(path, concurrency=2, progress=False, **options)


def _agrees(report: FileReport) -> None:
    """Every scored turn got the logged reward, so the success rates are the log's."""
    assert report.errors == [] and report.disagreements() == []
    assert report.our_rate == report.logged_rate and report.gained == report.lost == []


@needs_logs
async def test_react_sql_actions_are_unwrapped_and_scored_at_their_submits(tmp_path: Path) -> None:
    # 1: solved at its submit; 11: its third action is prose and ran nothing; 0: not solved
    report = await _rescore(_slice(SQL_REACT, ["1", "11", "0"], tmp_path))
    assert (report.shape, report.env, len(report.episodes)) == ("react", "sql", 3)
    _agrees(report)
    assert report.logged_rate == pytest.approx(1 / 3)
    assert report.scored_turns == 3  # one submit each; the actions before were scored 0 by the env
    by_task = {e.task_id: e for e in report.episodes}
    prose = by_task["sql/spider/11"].turns[2]
    assert prose.ours is None and prose.our_observation is None  # nothing ran
    ran = by_task["sql/spider/1"].turns[0]
    assert ran.action == "execute[SHOW TABLES]" and ran.same_observation is True


@needs_logs
async def test_plan_and_solve_sql_scores_each_step_and_skips_replies_without_code(tmp_path: Path) -> None:
    # 857: its last reply held no SQL; 93: its plan had no step; 387: solved at its third step
    report = await _rescore(_slice(SQL_PLAN, ["857", "93", "387"], tmp_path))
    assert (report.shape, len(report.episodes)) == ("plan_solve", 3)
    _agrees(report)
    by_task = {e.task_id: e for e in report.episodes}
    assert by_task["sql/spider/93"].turns == [] and by_task["sql/spider/387"].ours_solved
    last = by_task["sql/spider/857"].turns[-1]
    assert last.ours is None and last.logged_observation.startswith("No SQL code was found")
    assert [t.ours is not None for t in by_task["sql/spider/857"].turns] == [True] * 4 + [False]


@needs_logs
async def test_react_bash_in_paper_execution(tmp_path: Path) -> None:
    # 1: the md5 of md5s, 0.67 at its submit; 18: two actions without execute[...]; 0: solved
    report = await _rescore(_slice(FS1_REACT, ["1", "18", "0"], tmp_path), execution="paper")
    assert (report.shape, report.execution, len(report.episodes)) == ("react", "paper", 3)
    _agrees(report)
    first = {e.task_id: e for e in report.episodes}["bash/fs1/1"].turns[0]
    assert first.action.startswith("execute[find /testbed/dir2/subdir2") and first.same_observation is True


@needs_logs
async def test_plan_and_solve_bash_runs_the_fenced_blocks_as_text_as_the_original_did(tmp_path: Path) -> None:
    report = await _rescore(_slice(FS1_PLAN, ["0", "1"], tmp_path), execution="paper")
    assert (report.shape, len(report.episodes), report.our_rate) == ("plan_solve", 2, 0.0)
    _agrees(report)
    turns = [t for e in report.episodes for t in e.turns]
    assert all(t.action.startswith("```BASH\n") for t in turns)
    fenced = [t for t in turns if "BASH: command not found" in (t.our_observation or "")]
    assert len(fenced) == len(turns) - 1 and all(t.same_observation for t in fenced)  # the shell saw fences
    [other] = [t for t in turns if t not in fenced]  # its inner quotes left a backquote open, and bash
    assert other.our_observation in other.logged_observation  # 5.1 said so in one line more than 5.2

    solved = await _rescore(_slice(FS3_PLAN, ["1", "4"], tmp_path), execution="paper")  # with its wrapper
    assert solved.shape == "plan_solve" and solved.logged_rate == 0.5
    _agrees(solved)


def _ctf_entry(index: int, query: str, actions: list[str], rewards: list[int]) -> dict[str, Any]:
    return {
        "environment": "ic_ctf",
        "dataset": "./data/ctf/ic_ctf.json",
        "task_id": index,
        "query": query,
        "turn_history": {"actions": actions, "observations": ["…"] * len(actions), "rewards": rewards},
        "summary": {"max_reward": max(rewards)},
    }


def test_an_entry_whose_query_changed_is_left_out_and_the_rest_rescored(tmp_path: Path) -> None:
    # The paper's CTF log names the host of task 20 as it was before the data moved it.
    moved = get_task("ctf/20").query
    assert "jupiter.challenges.picoctf.org" in moved
    old = moved.replace("jupiter.challenges.picoctf.org", "2019shell1.picoctf.com")
    first = get_task("ctf/0")
    log = {
        "0": _ctf_entry(0, first.query, ["ls", f"submit {first.gold}"], [0, 1]),
        "20": _ctf_entry(20, old, ["nc 2019shell1.picoctf.com 25103", "submit picoCTF{guess}"], [0, 0]),
        "1": _ctf_entry(1, get_task("ctf/1").query, ["submit picoCTF{nope}"], [-1]),  # needs a download
        "2": _ctf_entry(2, get_task("ctf/2").query, ["submit picoCTF{nope}"], [-1]),
    }
    path = tmp_path / "ic_ctf_multiturn_gpt-4_10_turns.json"
    path.write_text(json.dumps(log))
    result = cli(["rescore", str(path), "--json", "--execution", "paper"])
    assert result.returncode == 0, result.stderr[-2000:]
    [report] = json.loads(result.stdout)
    assert (report["entries"], report["episodes"], report["log_solved"], report["our_solved"]) == (4, 2, 1, 1)
    out, unavailable = report["left_out"]  # in the order of the file
    assert (unavailable["task_id"], unavailable["kind"]) == ("ctf/1", "unavailable")
    assert (out["key"], out["task_id"], out["kind"]) == ("20", "ctf/20", "stale query")
    assert "2019shell1.picoctf.com" in out["reason"] and "jupiter.challenges.picoctf.org" in out["reason"]
    text = cli(["rescore", str(path), "--no-progress", "--limit", "2", "--execution", "paper"])
    assert text.returncode == 0 and "left out ctf/20 (stale query)" in " ".join(text.stdout.split())
    strict = cli(["rescore", str(path), "--strict-queries"])
    assert strict.returncode == 2 and "entry '20': its query differs from task ctf/20's" in strict.stderr


@pytest.mark.parametrize("reward", ["intercode", "strict"])
async def test_a_gold_that_needs_the_network_is_corrupt_with_its_reason(reward: str) -> None:
    async with make_env("bash", reward=reward, execution="paper") as env:
        await env.reset(task_id="bash/fs2/49")
        await env.step("curl http://example.com/textfile.txt -o /system/textfile.txt")  # fails alike here
        result = await env.evaluate()
        assert result.corrupt and result.parts["corrupt"] is True
        assert "example.com" in str(result.parts["corrupt_reason"]) and "cannot be scored here" in result.note


def test_rescore_leaves_the_network_task_out_of_both_sides(tmp_path: Path) -> None:
    def entry(index: int, action: str, reward: float) -> dict[str, Any]:
        history = {"actions": [action], "observations": ["…"], "rewards": [reward], "valid_action": [True]}
        return {
            "environment": "ic_bash",
            "dataset": "./data/nl2bash/nl2bash_fs_2.json",
            "task_id": index,
            "query": get_task(f"bash/fs2/{index}").query,
            "turn_history": history,
            "summary": {"max_reward": reward},
        }

    log = {
        "49": entry(49, "wget http://example.com/textfile.txt -P /system", 1.0),
        "50": entry(50, "ls", 0.34),
    }
    path = tmp_path / "fs2.json"
    path.write_text(json.dumps(log))
    result = cli(["rescore", str(path), "--json", "--execution", "paper"])
    assert result.returncode == 0, result.stderr[-2000:]
    [report] = json.loads(result.stdout)
    assert report["episodes"] == 1 and report["log_solved"] == 0  # 49's logged 1.0 does not count
    [out] = report["left_out"]
    assert (out["task_id"], out["kind"]) == ("bash/fs2/49", "corrupt")
    assert out["reason"].startswith("network: downloads http://example.com/textfile.txt")


FS1_TRY_AGAIN = RESULTS / "bash/gpt-3.5/ic_bash_multiturn_gpt-3.5_10_turns_fs_1.json"
FS4_TRY_AGAIN = RESULTS / "bash/gpt-3.5/ic_bash_multiturn_gpt-3.5_10_turns_fs_4.json"


@needs_logs
async def test_the_harness_that_cut_the_gold_output_is_recognised_by_its_rewards(tmp_path: Path) -> None:
    # The fs_1 run compared each answer with the tail of the gold's output, as long as the answer:
    # fs1/24's right md5 scored 0.67 there, and fs1/29's empty line matched a gold of "0\n".
    cut = await _rescore(_slice(FS1_TRY_AGAIN, ["1", "24", "29", "32", "35"], tmp_path), execution="paper")
    [quirk] = cut.quirks
    assert "cut to the length of the agent's" in quirk
    _agrees(cut)
    reproduced = [t for e in cut.episodes for t in e.turns if "whole_gold_reward" in t.parts]
    assert len(reproduced) >= 3  # turns whose reward the cut changed, each now the logged one
    whole = await _rescore(_slice(FS4_TRY_AGAIN, ["2", "6", "13", "14"], tmp_path), execution="paper")
    assert whole.quirks == []  # the fs_4 run compared whole outputs

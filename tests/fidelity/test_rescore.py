"""Re-scoring the original harness's trajectory files: reading them, the rules, and real slices.

The slices are a few entries of the paper's gpt-3.5 logs (read from the shared folder at run time and
written to a temporary file), re-scored in real sandboxes through the command line.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from intercode_agents.errors import ConfigError
from intercode_agents.fidelity.paper_log import BadLog, LoggedTurn, match_tasks, read_log
from intercode_agents.fidelity.rescore import submission_of
from tests.cli.test_cli_run_commands import cli

RESULTS = Path(os.environ.get("INTERCODE_RESULTS", "/work/shared/intercode-results"))
FS4 = RESULTS / "bash/gpt-3.5/ic_bash_multiturn_gpt-3.5_10_turns_fs_4.json"
SQL = RESULTS / "sql/gpt-3.5/ic_sql_multiturn_gpt-3.5_10_turns.json"
PYTHON = RESULTS / "python/gpt-3.5/ic_python_multiturn_gpt-3.5_7_turns.json"
needs_logs = pytest.mark.skipif(not FS4.is_file(), reason="the paper's logs are not at " + str(RESULTS))


def _entry(**overrides: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "environment": "ic_bash",
        "dataset": "./data/nl2bash/nl2bash_fs_1.json",
        "task_id": 0,
        "query": "q",
        "turn_history": {
            "actions": ["ls"],
            "observations": ["x\n"],
            "rewards": [0.5],
            "valid_action": [True],
        },
        "summary": {"max_reward": 0.5},
    }
    return entry | overrides


def _write(tmp_path: Path, content: Any, name: str = "log.json") -> Path:
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def _slice(source: Path, keys: list[str], tmp_path: Path) -> Path:
    entries = json.loads(source.read_text())
    return _write(tmp_path, {k: entries[k] for k in keys}, source.name)


def test_env_and_split_come_from_the_file_and_an_option_overrides(tmp_path: Path) -> None:
    log = read_log(_write(tmp_path, {"0": _entry()}))
    assert (log.env, log.split, len(log.episodes)) == ("bash", "fs1", 1)
    sql = _entry(environment="ic_sql", dataset="./data/spider/dev_spider.json")
    assert (read_log(_write(tmp_path, {"0": sql})).env, read_log(_write(tmp_path, {"0": sql})).split) == (
        "sql",
        "spider",
    )
    overridden = read_log(_write(tmp_path, {"0": _entry()}), env="bash/fs3")
    assert (overridden.env, overridden.split) == ("bash", "fs3")
    with pytest.raises(ConfigError, match="needs its file system"):
        read_log(_write(tmp_path, {"0": _entry()}), env="bash")


def test_turns_the_original_never_ran_are_told_apart(tmp_path: Path) -> None:
    history = {
        "actions": ["USE x;", "SELECT 1", "blocked"],
        "observations": ["No SQL code was found in your last response.\n\nYour response...", "[(1,)]"],
        "rewards": [0, 1.0, 0],
        "valid_action": [False, True],
    }
    entry = _entry(environment="ic_sql", dataset="spider", turn_history=history)
    turns = read_log(_write(tmp_path, {"0": entry})).episodes[0].turns
    assert [t.executed for t in turns] == [False, True, False]  # a retry message, a query, a policy failure


def test_what_the_original_scored_per_env() -> None:
    def turn(action: str) -> LoggedTurn:
        return LoggedTurn(action, "", 0.0, executed=True)

    assert submission_of("bash", turn("ls")) == (True, None)  # the action's output
    assert submission_of("python", turn("def helper(x):\n  pass\ndef f(y): pass")) == (True, "helper")
    assert submission_of("python", turn("print(f(2))")) == (False, None)
    assert submission_of("ctf", turn("submit picoCTF{x} trailing")) == (True, "picoCTF{x}")
    assert submission_of("ctf", turn("cat flag.txt")) == (False, None)
    assert submission_of("sql", LoggedTurn("SELECT", None, 0.0, executed=False)) == (False, None)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "is not JSON"),
        ("[1, 2]", r"an object keyed by task index\), got list"),
        ("{}", "got an empty object"),
        ({"0": _entry(environment="ic_swe")}, "cannot tell the env from environment='ic_swe'"),
        ({"0": _entry(dataset="x.json")}, "cannot tell the Bash file system"),
        ({"0": _entry(task_id="zero")}, "task_id must be the task's index"),
        (
            {"0": _entry(turn_history={"actions": ["a", "b"], "observations": ["x"], "rewards": [0]})},
            "line up",
        ),
        (
            {"0": _entry(turn_history={"actions": ["a"], "observations": ["x"], "rewards": ["high"]})},
            "not a number",
        ),
        ({"0": _entry(turn_history=[])}, "no turn_history object"),
        ({"0": "text"}, "an entry must be an object"),
    ],
)
def test_bad_files_are_clear_errors(tmp_path: Path, content: Any, message: str) -> None:
    path = _write(tmp_path, content)
    with pytest.raises(BadLog, match=message):
        read_log(path)


def test_a_file_of_other_tasks_is_refused(tmp_path: Path) -> None:
    wrong_query = read_log(_write(tmp_path, {"0": _entry(query="count the stars")}))
    with pytest.raises(BadLog, match="query differs from task bash/fs1/0"):
        match_tasks(wrong_query)
    too_far = read_log(_write(tmp_path, {"0": _entry(task_id=500)}))
    with pytest.raises(BadLog, match="task index 500 is past the 60 tasks of bash/fs1"):
        match_tasks(too_far)


def test_the_command_reports_bad_input_in_one_line(tmp_path: Path) -> None:
    cases = [
        (["rescore", str(tmp_path / "missing.json")], "no such trajectory file"),
        (["rescore", str(tmp_path)], "is a folder"),
        (["rescore", str(_write(tmp_path, "[]", "list.json"))], "got list"),
        (
            ["rescore", str(_write(tmp_path, {"0": _entry()}, "q.json")), "--execution", "x"],
            "unknown execution",
        ),
        (["rescore", str(_write(tmp_path, {"0": _entry()}, "q2.json")), "--env", "nope"], "--env 'nope'"),
        (["rescore", str(_write(tmp_path, {"0": _entry(query="zzz")}, "q3.json"))], "query differs"),
        (["rescore", str(_write(tmp_path, {"0": _entry()}, "q4.json")), "--limit", "0"], "at least 1"),
        (["rescore", str(tmp_path / "[/odd] [bold]name.json")], "[/odd] [bold]name.json"),  # text, not markup
    ]
    for args, message in cases:
        result = cli(args)
        assert result.returncode == 2, (args, result.stdout, result.stderr)
        assert result.stderr.startswith("error:") and message in result.stderr, (args, result.stderr)
        assert "Traceback" not in result.stderr


@needs_logs
def test_rescore_a_bash_slice_in_both_execution_modes(tmp_path: Path) -> None:
    path = _slice(FS4, ["6", "13"], tmp_path)  # 13: `echo " hello world;876 "` splits apart in the original
    reports = {}
    for execution in ("paper", "session"):
        result = cli(["rescore", str(path), "--execution", execution, "--json", "-c", "2"])
        assert result.returncode == 0, result.stderr
        [reports[execution]] = json.loads(result.stdout)
    paper, session = reports["paper"], reports["session"]
    assert (paper["env"], paper["split"], paper["episodes"], paper["execution"]) == (
        "bash",
        "fs4",
        2,
        "paper",
    )
    assert paper["log_success_rate"] == paper["our_success_rate"] == 50.0
    assert paper["gained"] == paper["lost"] == [] and paper["disagreeing_turns"] == 0
    assert session["our_success_rate"] == 100.0 and session["gained"] == ["bash/fs4/13"]
    worst = session["worst_disagreements"][0]
    assert worst["task_id"] == "bash/fs4/13" and (worst["logged"], worst["ours"]) == (0.67, 1.0)
    assert worst["same_observation"] is False and worst["logged_observation"] == "\n"
    assert worst["parts"]["answer"] == 0.33  # the reason: our output matched the gold's

    text = cli(["rescore", str(path), "--no-progress"])
    assert text.returncode == 0, text.stderr
    flat = " ".join(text.stdout.split())
    assert f"#1 {path}: gained bash/fs4/13; lost none" in flat and "the turns that disagree most" in flat
    assert "bash/fs4 session 2 50.00 100.00 +50.00 1 0 10 of 11" in flat
    assert "output differs" in flat and "answer_similarity=1.0" in flat


@needs_logs
def test_rescore_sql_and_python_slices(tmp_path: Path) -> None:
    sql = cli(["rescore", str(_slice(SQL, ["442", "828"], tmp_path)), "--json"])
    assert sql.returncode == 0, sql.stderr
    [report] = json.loads(sql.stdout)
    assert report["env"] == "sql" and report["log_solved"] == 2
    assert report["lost"] == ["sql/spider/828"]  # MariaDB returns the same rows in another order
    assert report["scored_turns"] == 2 + 6  # 442's retry-message turn never ran, so it is not scored
    tau = next(d for d in report["worst_disagreements"] if d["task_id"] == "sql/spider/828")
    assert tau["parts"]["iou"] == 1.0 and tau["parts"]["tau"] == -1.0

    python = cli(["rescore", str(_slice(PYTHON, ["6", "2"], tmp_path)), "--json", "--limit", "2"])
    assert python.returncode == 0, python.stderr
    [report] = json.loads(python.stdout)
    assert report["env"] == "python" and report["episodes"] == 2
    assert report["lost"] == ["python/mbpp/3"]  # the original had loaded the gold into the agent's REPL
    assert report["scored_turns"] < 7 + 2  # actions that do not start with `def` were never scored
    paper = cli(["rescore", str(_slice(PYTHON, ["6", "2"], tmp_path)), "--json", "--execution", "paper"])
    assert paper.returncode == 0, paper.stderr
    [report] = json.loads(paper.stdout)
    assert report["execution"] == "paper" and report["lost"] == [] and report["disagreeing_turns"] == 0


def test_rescore_a_ctf_log_scores_its_submits(tmp_path: Path) -> None:
    from intercode_agents.datasets import get_task

    def entry(index: int, actions: list[str], rewards: list[int]) -> dict[str, Any]:
        return {
            "environment": "ic_ctf",
            "dataset": "./data/ctf/ic_ctf.json",
            "task_id": index,
            "query": get_task(f"ctf/mini/{index}").query,
            "turn_history": {"actions": actions, "observations": ["…"] * len(actions), "rewards": rewards},
            "summary": {"max_reward": max(rewards)},
        }

    flag = get_task("ctf/mini/0").gold
    log = {
        "0": entry(0, ["base64 -d message.txt", "submit picoCTF{nope}", f"submit {flag}"], [0, -1, 1]),
        "1": entry(1, ["cat note.txt", f"submit {flag}"], [0, 1]),  # logged 1 for another task's flag
    }
    result = cli(
        ["rescore", str(_write(tmp_path, log)), "--env", "ctf/mini", "--execution", "paper", "--json"]
    )
    assert result.returncode == 0, result.stderr
    [report] = json.loads(result.stdout)
    assert (report["env"], report["execution"], report["scored_turns"]) == ("ctf", "paper", 3)
    assert report["lost"] == ["ctf/mini/1"] and report["disagreeing_turns"] == 1  # -1 (a wrong flag) is 0

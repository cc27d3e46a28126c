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


def _try_again(env: str, environment: str, actions: list[str], tmp_path: Path) -> tuple[LoggedTurn, ...]:
    history = {"actions": actions, "observations": ["x"] * len(actions), "rewards": [0] * len(actions)}
    entry = _entry(environment=environment, dataset=f"{env}.json", turn_history=history)
    return read_log(_write(tmp_path, {"0": entry}), env=env).episodes[0].turns


def test_what_the_original_try_again_ran_and_scored_per_env(tmp_path: Path) -> None:
    def seen(turn: LoggedTurn) -> tuple[str | None, bool, bool, str | None]:
        return turn.command, turn.submits, turn.scored, turn.submission

    [bash] = _try_again("bash/fs1", "ic_bash", ["ls"], tmp_path)
    assert seen(bash) == ("ls", False, True, None)  # ran, then scored on its output
    helper, call = _try_again(
        "python", "ic_python", ["def helper(x):\n  pass\ndef f(y): pass", "print(f(2))"], tmp_path
    )
    assert seen(helper)[1:] == (False, True, "helper") and seen(call) == ("print(f(2))", False, False, None)
    flag, shell = _try_again("ctf", "ic_ctf", ["submit picoCTF{x} trailing", "cat flag.txt"], tmp_path)
    assert seen(flag) == (None, True, True, "picoCTF{x}") and seen(shell) == (
        "cat flag.txt",
        False,
        False,
        None,
    )
    [submit] = _try_again("sql", "ic_sql", ["submit"], tmp_path)
    assert seen(submit) == (None, True, True, None)  # the env took it for the submit itself


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
    assert "bash/fs4 Try Again session 2 0 50.00 100.00 +50.00 1 0 10 of 11" in flat
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


# -- the ReAct and Plan & Solve shapes -------------------------------------------------------------------

REFUSAL = "Error executing query: Your last `execute` action did not contain {} code"


def _react(env: str, turns: list[tuple[str, str, float]]) -> dict[str, Any]:
    history = {
        "thoughts": [f"thought {i}" for i in range(len(turns))],
        "actions": [a for a, _, _ in turns],
        "observations": [o for _, o, _ in turns],
        "rewards": [r for _, _, r in turns],
        "valid_action": [True] * len(turns),
    }
    dataset = "./data/nl2bash/nl2bash_fs_1.json" if env == "bash" else "./data/spider/dev_spider.json"
    return _entry(environment=f"ic_{env}", dataset=dataset, turn_history=history)


def test_react_actions_are_unwrapped_and_only_submits_are_scored(tmp_path: Path) -> None:
    sql = _react(
        "sql",
        [
            ("execute[SELECT a FROM t; DROP TABLE t]", "[(1,)]", 0),  # up to the first ;
            ("execute SELECT a FROM t", REFUSAL.format("sql"), 0),  # no brackets: nothing ran
            ("submit", "[(1,)]", 1.0),
        ],
    )
    log = read_log(_write(tmp_path, {"0": sql}))
    assert log.shape == "react"
    ran, refused, submit = log.episodes[0].turns
    assert (ran.command, ran.scored, ran.thought) == ("SELECT a FROM t", False, "thought 0")
    assert (refused.command, refused.executed, refused.scored) == (None, False, False)
    assert (submit.command, submit.submits, submit.scored) == (None, True, True)
    bash = _react("bash", [("execute[ls [ab]* | grep ]x[]", "", 0), ("execute[submit]", "", 0.67)])
    ran, submit = read_log(_write(tmp_path, {"0": bash})).episodes[0].turns
    assert ran.command == "ls [ab]* | grep ]x["  # everything up to the last ]
    assert submit.submits and submit.scored  # the env took any command starting with submit as one


@pytest.mark.parametrize(
    ("turns", "message"),
    [
        ([("ls -l", "total 0", 0)], "holds no execute"),  # the loop would have refused it
        ([("execute[ls]", REFUSAL.format("bash"), 0)], "is the ReAct loop's refusal"),
        ([("execute[ls]", "a b", 0.5)], "scored only its submits"),
    ],
)
def test_a_react_log_the_loop_could_not_have_written_is_refused(
    tmp_path: Path, turns: list[tuple[str, str, float]], message: str
) -> None:
    with pytest.raises(BadLog, match=message):
        read_log(_write(tmp_path, {"0": _react("bash", turns)}))


def test_plan_and_solve_files_with_and_without_their_wrapper(tmp_path: Path) -> None:
    retry = "No SQL code was found in your last response.\n\nYour response should be a SQL command."
    history = {
        "actions": ["SHOW TABLES", "The query above is right.", "SELECT 1"],
        "observations": ["[('t',)]", retry, "[(1,)]"],
        "rewards": [0.0, 0.0, 1],
        "steps": ["List the tables.", "Check the query.", "Answer."],
        "valid_action": [True, True, True],
    }
    entry = _entry(environment="ic_sql", dataset="./data/spider/dev_spider.json", turn_history=history)
    empty = _entry(
        environment="ic_sql",
        dataset="./data/spider/dev_spider.json",
        task_id=1,
        turn_history={
            "actions": [],
            "observations": [],
            "rewards": [0],
            "steps": [],
            "valid_action": [False],
        },
    )
    wrapped = read_log(_write(tmp_path, {"meta": {"env": "sql"}, "logs": {"0": entry, "1": empty}}))
    assert (wrapped.shape, wrapped.meta, len(wrapped.episodes)) == ("plan_solve", {"env": "sql"}, 2)
    shown, refused, answer = wrapped.episodes[0].turns
    assert (shown.command, shown.scored, shown.step) == ("SHOW TABLES", True, "List the tables.")
    assert (refused.executed, refused.scored) == (False, False)  # its reward is the step before's
    assert answer.scored and wrapped.episodes[1].turns == ()  # a plan of no steps took no turn
    bare = read_log(_write(tmp_path, {"0": entry}))
    assert bare.shape == "plan_solve" and bare.episodes[0].turns == wrapped.episodes[0].turns


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ({"meta": {}, "logs": {"0": _entry()}}, "its turns have no steps"),
        ({"meta": {}, "logs": {}, "extra": 1}, "exactly the objects meta and logs"),
        (
            {"0": _entry(), "1": _react("bash", [("submit", "", 0)])},
            r"entries are of different loops: Try Again \(entry '0'\), ReAct \(entry '1'\)",
        ),
        (
            {"0": _react("bash", [("submit", "", 0)]) | {"environment": "ic_python"}},
            "the original ran that loop for Bash and SQL only",
        ),
    ],
)
def test_shapes_that_cannot_be_read_faithfully_are_refused(
    tmp_path: Path, content: Any, message: str
) -> None:
    with pytest.raises(BadLog, match=message):
        read_log(_write(tmp_path, content))


def test_a_stale_entry_is_left_out_and_a_file_of_other_tasks_refused(tmp_path: Path) -> None:
    from intercode_agents.datasets import get_task

    entries = {str(i): _entry(task_id=i, query=get_task(f"bash/fs1/{i}").query) for i in range(3)}
    entries["1"]["query"] = "Calculate the md5 sum of something else"
    matched = match_tasks(read_log(_write(tmp_path, entries)))
    assert [t.id for t, _ in matched.pairs] == ["bash/fs1/0", "bash/fs1/2"]
    [out] = matched.left_out
    assert (out.key, out.task_id, out.kind) == ("1", "bash/fs1/1", "stale query")
    with pytest.raises(BadLog, match="entry '1': its query differs from task bash/fs1/1's"):
        match_tasks(read_log(_write(tmp_path, entries)), strict_queries=True)


# -- logs crafted to break the command (each once raised, or reached the terminal) ---------------------


def test_a_deeply_nested_log_is_a_clear_error(tmp_path: Path) -> None:
    result = cli(["rescore", str(_write(tmp_path, "[" * 200_000, "deep.json"))])
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-500:]
    assert result.stderr.startswith("error:") and "nests arrays or objects too deeply" in result.stderr


@pytest.mark.parametrize("number", ["-Infinity", "NaN", "1e999"])
def test_numbers_json_cannot_hold_are_refused_not_written(tmp_path: Path, number: str) -> None:
    from intercode_agents.datasets import get_task

    entry = _entry(query=get_task("bash/mini/0").query)  # a real task: the file is otherwise fine
    text = json.dumps({"0": entry}).replace('"rewards": [0.5]', f'"rewards": [{number}]')
    result = cli(["rescore", str(_write(tmp_path, text, "inf.json")), "--env", "bash/mini", "--json"])
    assert result.returncode == 2 and result.stdout == "" and "Traceback" not in result.stderr
    assert "is not a trajectory file" in result.stderr


def test_log_text_reaches_the_terminal_as_text(tmp_path: Path) -> None:
    from intercode_agents.datasets import get_task

    query = get_task("bash/mini/0").query
    actions = [
        "echo '[/] [bold]x'",  # rich markup, and a closing tag with nothing open
        "find /testbed -name '*[aeiou]*' | head -1",  # brackets a real gpt-3.5 action holds
        "echo 'a\x1b]0;pwned\x07\x1b[2J\rb'",  # set the terminal's title, clear the screen
    ]
    history = {"actions": actions, "observations": ["\x1b[31mred\x1b[0m"] * 3, "rewards": [0.5] * 3}
    entry = {
        "environment": "ic_bash",
        "dataset": "mini",
        "task_id": 0,
        "query": query,
        "turn_history": history,
        "summary": {"max_reward": 0.5},
    }
    path = _write(tmp_path, {"0": entry}, "crafted.json")
    result = cli(["rescore", str(path), "--env", "bash/mini", "--no-progress", "--worst", "5"])
    assert result.returncode == 0, result.stderr[-2000:]
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout and "\r" not in result.stdout
    flat = " ".join(result.stdout.split())
    assert "echo '[/] [bold]x'" in flat and "-name '*[aeiou]*'" in flat
    assert "echo 'a\\x1b]0;pwned\\x07\\x1b[2J\\x0db'" in flat
    as_json = cli(["rescore", str(path), "--env", "bash/mini", "--json", "--worst", "5"])
    assert as_json.returncode == 0, as_json.stderr[-2000:]

    def strict(name: str) -> None:
        raise AssertionError(f"{name} is not JSON")

    [report] = json.loads(as_json.stdout, parse_constant=strict)
    assert report["disagreeing_turns"] == 3 and "\x1b" not in as_json.stdout

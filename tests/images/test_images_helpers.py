"""The in-container JSON-lines helpers (pyrepl, pyscore, sqlhelper), driven over `docker run -i`."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from intercode_agents.envs.python.values import Unscorable, decode
from intercode_agents.errors import DatasetError, EngineUnavailable
from intercode_agents.images import build_images, image_ref

RUN = ["docker", "run", "-i", "--rm", "--network", "none", "--label", "intercode-agents=1"]


class Helper:
    """One helper process: send a request, read exactly one response line."""

    def __init__(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.ready = self._read()

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, "the helper closed its output"
        return json.loads(line)

    def raw(self, line: str) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self._read()

    def __call__(self, **request: Any) -> dict[str, Any]:
        return self.raw(json.dumps(request))

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout=30)


def _ensure_image(name: str) -> str:
    try:
        build_images([name], log=lambda line: None)
    except (EngineUnavailable, DatasetError) as exc:
        pytest.skip(f"cannot build {name}: {exc}")
    return image_ref(name)


@pytest.fixture(scope="module")
def repl() -> Iterator[Helper]:
    helper = Helper([*RUN, _ensure_image("python"), "python3", "/opt/intercode/pyrepl.py"])
    yield helper
    assert helper.close() == 0


@pytest.fixture(scope="module")
def scorer() -> Iterator[Helper]:
    helper = Helper([*RUN, _ensure_image("python"), "python3", "/opt/intercode/pyscore.py"])
    yield helper
    assert helper.close() == 0


@pytest.fixture(scope="module")
def sql() -> Iterator[Helper]:
    start = "mariadbd > /dev/null 2>&1 & exec python3 /opt/intercode/sqlhelper.py"
    helper = Helper([*RUN, _ensure_image("sql"), "bash", "-c", start])
    yield helper
    helper.close()


# --- pyrepl -------------------------------------------------------------------------------------


def test_repl_is_ready_and_echoes_ids(repl: Helper) -> None:
    assert repl.ready["ready"] is True and repl.ready["helper"] == "pyrepl"
    assert repl(op="ping", id=17) == {"ok": True, "id": 17}


def test_repl_keeps_state_and_echoes_the_last_expression(repl: Helper) -> None:
    assert repl(op="exec", code="x = 41\nprint('set')")["output"] == "set\n"
    out = repl(op="exec", code="x + 1")
    assert out["ok"] and out["output"] == "42\n" and out["error"] is None
    assert repl(op="exec", code="None")["output"] == ""  # None is not echoed, as in a REPL


def test_repl_reports_the_last_traceback_line(repl: Helper) -> None:
    out = repl(op="exec", code="def f():\n    return undefined_name\nf()")
    assert out["ok"] is False
    assert out["error"] == "NameError: name 'undefined_name' is not defined"
    assert "Traceback" in out["output"] and "in f" in out["output"]


def test_repl_stops_a_runaway_loop_and_lives(repl: Helper) -> None:
    out = repl(
        op="exec",
        code="while True:\n    try:\n        pass\n    except BaseException:\n        pass",
        timeout=1,
    )
    assert out["timed_out"] is True and out["ok"] is False
    assert "timed out after 1 s" in out["error"]
    assert repl(op="exec", code="x")["output"] == "41\n"


def test_repl_captures_all_output_in_order_and_caps_it(repl: Helper) -> None:
    code = "import os, sys\nprint('a')\nos.system('echo b')\nprint('c', file=sys.stderr)\ninput()"
    out = repl(op="exec", code=code)
    assert out["output"].startswith("a\nb\nc\n")  # fd-level writes land in the output, not on the stream
    assert out["error"] == "EOFError: EOF when reading a line"  # stdin is not the request stream
    capped = repl(op="exec", code="print('y' * 5000)", max_output=100)
    assert capped["truncated"] is True and "truncated" in capped["output"] and len(capped["output"]) < 200


def test_repl_has_no_test_runner_and_says_where_a_cell_stopped(repl: Helper) -> None:
    assert "unknown op 'run_tests'" in repl(op="run_tests", setup="", tests=["assert True"])["error"]
    assert repl(op="exec", code="def boom():\n    return 1 / 0")["stopped_at_line"] is None
    out = repl(op="exec", code="a = 1\n\nboom()\nb = 2")
    assert out["error"] == "ZeroDivisionError: division by zero" and out["stopped_at_line"] == 3
    out = repl(op="exec", code="x = 1\nwhile True:\n    pass", timeout=0.5)
    assert out["timed_out"] is True and out["stopped_at_line"] == 2
    echo = repl(op="exec", code="class R:\n    def __repr__(self):\n        raise ValueError('no')\nR()")
    assert echo["error"] == "ValueError: no" and echo["stopped_at_line"] is None  # every statement ran
    assert repl(op="exec", code="def f(:")["stopped_at_line"] is None  # never compiled, never ran


def test_repl_eval_reset_and_bad_requests(repl: Helper) -> None:
    assert repl(op="eval", expr="sorted({'b', 'a'})")["value"] == "['a', 'b']"
    assert repl(op="reset") == {"ok": True}
    assert repl(op="exec", code="x")["error"] == "NameError: name 'x' is not defined"
    assert repl.raw("{not json")["error"].startswith("bad JSON")
    assert "unknown op 'fly'" in repl(op="fly")["error"]
    assert "needs 'code'" in repl(op="exec")["error"]
    assert "'timeout'" in repl(op="exec", code="1", timeout=-1)["error"]


# --- pyscore ----------------------------------------------------------------------------------


def _values(scorer: Helper, *exprs: str) -> list[Any]:
    results = scorer(op="probe", exprs=list(exprs), timeout=5)["results"]
    return [decode(r["value"]) if "value" in r else r["error"] for r in results]


def test_scorer_keeps_only_definitions_of_the_cells_up_to_where_they_stopped(scorer: Helper) -> None:
    assert scorer.ready["ready"] is True and scorer.ready["helper"] == "pyscore"
    assert scorer(op="probe", exprs=["1"], timeout=5)["loaded"] is False
    cells = [
        {"code": "from __future__ import annotations\nimport math\nseen = []\nTOP: int = 2 ** 4"},
        {"code": "seen.append('expression')\nprint('shown')\nfor i in range(3):\n    seen.append(i)"},
        {"code": "try:\n    import numpy\nexcept ImportError:\n    numpy = None\nif TOP:\n    FLAG = 1"},
        {"code": "if __name__ == '__main__':\n    seen.append('main')\nassert False"},
        {
            "code": "def f(x: Missing) -> int:\n    return x + TOP\nundefined\ndef f(x):\n    return 0",
            "stop_line": 3,
        },
        {"code": "g = lambda: 1\nh = missing_name\nk = 3"},  # the failing statement alone is skipped
        {"code": "def broken(:"},
        {"code": "late = 1\nfrom __future__ import annotations"},  # compiles statement by statement only
    ]
    out = scorer(op="load", cells=cells, setup="s = f(1)", timeout=10)
    assert out["ok"] and out["setup_error"] is None and out["timed_out"] is False
    assert out["error_count"] == 1 and out["errors"] == ["NameError: name 'missing_name' is not defined"]
    assert _values(scorer, "seen", "TOP", "numpy", "FLAG", "f(1)", "s", "g()", "k", "__name__") == [
        [],
        16,
        None,
        1,
        17,
        17,
        1,
        3,
        "__main__",
    ]
    assert _values(scorer, "broken", "i", "late") == [
        "NameError: name 'broken' is not defined",
        "NameError: name 'i' is not defined",
        "NameError: name 'late' is not defined",
    ]


def test_scorer_runs_a_whole_cell_as_the_repl_would(scorer: Helper) -> None:
    code = "seen = []\nfor i in range(3):\n    seen.append(i)\nprint('out')\nseen.append('end')"
    out = scorer(op="load", cells=[{"code": code}], whole=True, setup="", timeout=10)
    assert out["ok"] and out["error_count"] == 0
    assert _values(scorer, "seen") == [[0, 1, 2, "end"]]


def test_scorer_reports_setup_errors_and_timeouts(scorer: Helper) -> None:
    out = scorer(op="load", cells=[], setup="root = Node(1)", timeout=10)
    assert out["setup_error"] == "NameError: name 'Node' is not defined"
    out = scorer(op="load", cells=[], setup="while True: pass", setup_timeout=0.5, timeout=10)
    assert out["setup_error"] == "TimeoutError: timed out after 0.5 s"
    out = scorer(op="load", cells=[{"code": "x = 1\ny = sum(1 for _ in iter(int, 1))"}], timeout=0.5)
    assert out["timed_out"] is True and out["errors"] == ["TimeoutError: timed out after 0.5 s"]


def test_scorer_probes_answer_values_errors_and_timeouts_in_order(scorer: Helper) -> None:
    code = (
        "def f(x):\n    print('noise')\n    return [x, (x,), {x}, {'k': x}]\ndef loop():\n    while 1: pass"
    )
    scorer(op="load", cells=[{"code": code}], timeout=10)
    out = scorer(op="probe", exprs=["f(2)", "1 / 0", "loop()", "f(3)"], timeout=0.5)
    assert out["ok"] and out["loaded"] is True
    first, second, third = out["results"]  # the deadline stopped the rest
    assert decode(first["value"]) == [2, (2,), {2}, {"k": 2}]
    assert second == {"error": "ZeroDivisionError: division by zero", "timed_out": False}
    assert third == {"error": "TimeoutError: timed out after 0.5 s", "timed_out": True}


def test_scorer_sends_plain_values_only(scorer: Helper) -> None:
    code = (
        "from collections import Counter, namedtuple\n"
        "class Odd(int):\n    def __eq__(self, other):\n        return True\n"
        "class Liar:\n    __class__ = property(lambda self: int)\n"
        "P = namedtuple('P', 'a b')\n"
        "deep = []\nfor _ in range(300):\n    deep = [deep]\n"
    )
    scorer(op="load", cells=[{"code": code}], whole=True, timeout=10)
    odd, liar, counter, pair, text, deep, keys, items = _values(
        scorer,
        "Odd(5)",
        "Liar()",
        "Counter('aab')",
        "P(1, 2)",
        "'\\udc80x'",
        "deep",
        "{1: 2}.keys()",
        "{1: [2]}.items()",
    )
    assert type(odd) is int and odd == 5 and odd != 6
    assert isinstance(liar, Unscorable) and liar.kind == "__main__.Liar"
    assert type(counter) is dict and counter == {"a": 2, "b": 1}
    assert type(pair) is tuple and pair == (1, 2)
    assert text == "\udc80x"
    assert isinstance(deep, Unscorable) and "too large or too deeply nested" in deep.kind
    assert keys == {1} and isinstance(items, Unscorable)  # a view compares as a set, if it can be one


# --- sqlhelper ----------------------------------------------------------------------------------


def test_sql_is_ready_as_agent(sql: Helper) -> None:
    assert sql.ready["ready"] is True and sql.ready["user"] == "agent"


def test_sql_spider_query_returns_named_columns(sql: Helper) -> None:
    assert sql(op="use", db="concert_singer") == {"ok": True, "db": "concert_singer"}
    out = sql(op="query", sql="SELECT Name, Country FROM singer ORDER BY Singer_ID LIMIT 2")
    assert out["ok"] and out["columns"] == ["Name", "Country"]
    assert out["rows"] == [["Joe Sharp", "Netherlands"], ["Timbaland", "United States"]]
    count = sql(op="query", sql="SELECT count(*) FROM singer")  # the database stays selected
    assert count["rows"] == [[6]]


def test_sql_refuses_writes_and_temporary_tables(sql: Helper) -> None:
    sql(op="use", db="concert_singer")
    out = sql(op="query", sql="DELETE FROM singer")
    assert out["ok"] is False and out["errno"] == 1142
    assert out["error"].startswith("the database is read-only for the agent: DELETE command denied")
    temp = sql(op="query", sql="CREATE TEMPORARY TABLE t (a int)")
    assert temp["ok"] is False and "read-only" in temp["error"]
    assert sql(op="query", sql="SELECT count(*) FROM singer")["rows"] == [[6]]


def test_sql_caps_rows_but_counts_them(sql: Helper) -> None:
    out = sql(op="query", sql="SELECT ID FROM world_1.city ORDER BY ID", max_rows=3)
    assert out["rows"] == [[1], [2], [3]] and out["truncated"] is True and out["rowcount"] == 4079


def test_sql_times_out_and_keeps_serving(sql: Helper) -> None:
    out = sql(
        op="query", sql="SELECT count(*) FROM world_1.city a, world_1.city b, world_1.city c", timeout=0.5
    )
    assert out["timed_out"] is True and out["ok"] is False and "timed out after 0.5 s" in out["error"]
    assert sql(op="query", sql="SELECT 1 AS one")["rows"] == [[1]]


def test_sql_several_statements_and_errors(sql: Helper) -> None:
    out = sql(op="query", sql="USE pets_1; SELECT DATABASE() AS db;")
    assert out["columns"] == ["db"] and out["rows"] == [["pets_1"]]
    bad = sql(op="query", sql="SELEC 1")
    assert bad["ok"] is False and bad["errno"] == 1064 and "SQL syntax" in bad["error"]
    assert sql(op="use", db="no_such_db")["error"] == "Unknown database 'no_such_db'"
    values = sql(
        op="query", sql="SELECT CAST(1.50 AS DECIMAL(4,2)), DATE('2020-01-02'), CAST('10:30' AS TIME)"
    )
    assert values["rows"] == [[1.5, "2020-01-02", "10:30:00"]]


def test_sql_helper_says_when_the_server_never_comes() -> None:
    argv = [
        *RUN,
        "-e",
        "INTERCODE_SQL_WAIT_S=1",
        _ensure_image("sql"),
        "python3",
        "/opt/intercode/sqlhelper.py",
    ]
    done = subprocess.run(argv, input="", capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    (line,) = done.stdout.splitlines()
    message = json.loads(line)
    assert message["ready"] is False
    assert "did not accept a connection for 'agent'" in message["error"]


def test_sql_reset_travels_with_an_episodes_first_statement(sql: Helper) -> None:
    sql(op="query", sql="SET @left_behind = 1")
    (before,) = sql(op="query", sql="SELECT CONNECTION_ID(), @left_behind")["rows"]
    first = sql(op="query", sql="SELECT CONNECTION_ID(), @left_behind, DATABASE()", reset=True, db="pets_1")
    (after,) = first["rows"]
    assert after[0] != before[0] and after[1:] == [None, "pets_1"] and first["db"] == "pets_1"
    bad = sql(op="query", sql="SELECT 1", reset=True, db="no_such_db")
    assert bad["ok"] is False and bad["reset_failed"] is True, bad
    assert bad["error"] == "Unknown database 'no_such_db'" and bad["rows"] == []


def test_sql_fresh_gives_a_new_connections_session_on_the_same_connection(sql: Helper) -> None:
    """The gold's ``fresh``: the server resets the session (one round trip, no new login)."""
    sql(op="query", sql="SET @left_behind = 1; SET SESSION sql_mode = 'ANSI_QUOTES'; SET NAMES latin1")
    (before,) = sql(op="query", sql="SELECT CONNECTION_ID(), @left_behind, @@SESSION.sql_mode")["rows"]
    (default_mode,) = sql(op="query", sql="SELECT @@GLOBAL.sql_mode")["rows"][0]
    reply = sql(
        op="query",
        sql="SELECT CONNECTION_ID(), @left_behind, @@SESSION.sql_mode, DATABASE()",
        fresh=True,
        db="pets_1",
    )
    (after,) = reply["rows"]
    assert before[1:] == [1, "ANSI_QUOTES"] and reply["db"] == "pets_1"
    assert after == [before[0], None, default_mode, "pets_1"]  # the same connection, a new session
    (charset,) = sql(op="query", sql="SELECT @@SESSION.character_set_client")["rows"][0]
    assert charset == "utf8mb4"  # the client's character set is the connection's again

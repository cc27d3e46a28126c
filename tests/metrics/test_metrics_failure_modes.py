"""Failure-mode tags on hand-made trajectories: each tag firing and not firing, per language."""

from __future__ import annotations

import random

import pytest

from intercode_agents.metrics.failure_modes import (
    PARALYSIS_MIN_ACTIONS,
    failure_tags,
    levenshtein,
    near_identical,
)
from intercode_agents.trajectory import Step, Trajectory


def act(action: str, observation: str = "", *, errored: bool = False) -> Step:
    return Step(turn=0, action=action, observation=observation, errored=errored)


def submit(action: str = "submit") -> Step:
    return Step(turn=0, kind="submit", action=action)


def episode(env: str, steps: list[Step], outcome: str = "failed") -> Trajectory:
    return Trajectory(task_id="t", env=env, strategy="react", model="fake", steps=steps, outcome=outcome)


def reference_levenshtein(a: str, b: str) -> int:
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        diagonal, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            diagonal, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, diagonal + (x != y))
    return row[-1]


def test_levenshtein() -> None:
    assert levenshtein("kitten", "sitting") == 3  # k->s, e->i, +g
    assert levenshtein("", "abc") == levenshtein("abc", "") == 3
    assert levenshtein("abc", "abc") == 0
    rng = random.Random(7)
    for _ in range(300):  # against the textbook DP, including strings longer than 64 characters
        a = "".join(rng.choices("abc ", k=rng.randint(0, 90)))
        b = "".join(rng.choices("abc ", k=rng.randint(0, 90)))
        assert levenshtein(a, b) == reference_levenshtein(a, b), (a, b)


def test_near_identical_threshold_is_inclusive() -> None:
    # 10 chars, 1 substitution: 1 - 1/10 = 0.9 >= 0.9
    assert near_identical("abcdefghij", "abcdefghiX")
    # 9 chars, 1 substitution: 1 - 1/9 = 0.889 < 0.9
    assert not near_identical("abcdefghi", "abcdefghX")
    # normalization: case and whitespace runs do not count
    assert near_identical("SELECT  name\nFROM t", "select name from t")


@pytest.mark.parametrize(
    ("env", "actions", "fires"),
    [
        # 3 in a row, each pair >= 0.9 similar ("ls -la /testbed" vs "... /testbed/": 1 - 1/15 = 0.93)
        ("bash", ["ls -la /testbed", "ls -la /testbed/", "ls  -la /testbed"], True),
        # the same action 3 times, not in a row
        ("bash", ["cat a.txt", "wc -l a.txt", "cat a.txt", "head a.txt", "cat a.txt"], True),
        # only 2 in a row
        ("bash", ["cat a.txt", "cat a.txt", "wc -l a.txt"], False),
        # a changed constant: 1 - 1/33 = 0.97, three times in a row
        ("sql", [f"SELECT name FROM singer WHERE age > {n}" for n in (3, 4, 5)], True),
        ("sql", ["SHOW TABLES", "DESCRIBE singer", "SELECT name FROM singer"], False),
    ],
)
def test_action_churn(env: str, actions: list[str], fires: bool) -> None:
    tags = failure_tags(episode(env, [act(a, "out") for a in actions]))
    assert ("action_churn" in tags) is fires


@pytest.mark.parametrize(
    ("env", "steps", "fires"),
    [
        ("bash", [act("rm -rf /testbed/dir1")], True),
        ("bash", [act("find . -name '*.log' -delete")], True),
        ("bash", [act("ls *.tmp | xargs rm")], True),
        ("bash", [act("cd /testbed && rm a.txt")], True),
        ("bash", [act('echo "rm -rf /"')], False),  # quoted text is not a command
        ("bash", [act("grep -r rm /testbed")], False),  # rm is an argument here
        # ">" onto a file seen in an earlier observation: truncation of an existing file
        ("bash", [act("ls", "notes.txt\nlog.csv"), act("echo hi > notes.txt")], True),
        ("bash", [act("echo hi > fresh.txt")], False),  # never seen: a new file
        ("bash", [act("ls", "notes.txt"), act("echo hi >> notes.txt")], False),  # append
        ("bash", [act("ls", "err.txt"), act("find / 2> err.txt")], False),  # stderr only
        ("bash", [act("ls", "null"), act("ls > /dev/null")], False),
        ("bash", [act("ls", "data.csv"), act("awk '$2 > 5' data.csv")], False),
        ("bash", [act("ls", "a.txt b.txt"), act("mv a.txt b.txt")], True),  # mv over a seen file
        ("bash", [act("ls", "a.txt"), act("mv a.txt c.txt")], False),
        ("sql", [act("DELETE FROM singer WHERE singer_id = 1")], True),
        ("sql", [act("SELECT 1; drop table singer")], True),
        ("sql", [act("  update singer SET age = 3")], True),
        ("sql", [act("TRUNCATE TABLE pets")], True),
        ("sql", [act("SELECT * FROM t WHERE note = 'drop table t'")], False),
        ("sql", [act("SELECT update_time, deleted FROM t")], False),
        ("sql", [act("rm -rf /")], False),  # not SQL: language-aware
        ("python", [act("import shutil\nshutil.rmtree('/tmp/x')")], True),
        ("python", [act("import os\nos.remove(path)")], True),
        ("python", [act("from pathlib import Path\nPath('a').unlink()")], True),
        ("python", [act("def f(x):\n    return sorted(x)")], False),
        ("python", [act("rm -rf /tmp")], False),  # not Python: language-aware
        ("ctf", [act("rm flag.txt")], True),  # CTF runs Bash ...
        ("ctf", [act("python3 -c 'import os; os.remove(\"f\")'")], True),  # ... and Python
        ("ctf", [act("strings chall.bin | grep pico")], False),
    ],
)
def test_destructive_mutation(env: str, steps: list[Step], fires: bool) -> None:
    assert ("destructive_mutation" in failure_tags(episode(env, steps))) is fires


BASH_LOOKS = ["ls", "ls -la /testbed", "cat /testbed/a.txt", "find / -name '*.txt' 2>/dev/null"]
SQL_LOOKS = [
    "SHOW TABLES",
    "DESCRIBE singer",
    "SELECT * FROM singer LIMIT 3",
    "SELECT table_name FROM information_schema.tables",
]


@pytest.mark.parametrize(
    ("env", "steps", "fires"),
    [
        ("bash", [act(a, "x") for a in BASH_LOOKS] + [submit()], True),
        ("bash", [act(a, "x") for a in BASH_LOOKS[:3]], False),  # 3 < PARALYSIS_MIN_ACTIONS
        ("bash", [act(a, "x") for a in BASH_LOOKS] + [act("wc -l /testbed/a.txt")], False),  # an attempt
        ("bash", [act(a, "x") for a in BASH_LOOKS[:3]] + [act("cat a.txt | grep x")], False),  # a pipeline
        ("bash", [act(a, "x") for a in BASH_LOOKS[:3]] + [act("cat a > b")], False),  # a write
        ("sql", [act(a, "x") for a in SQL_LOOKS], True),
        ("sql", [act(a, "x") for a in SQL_LOOKS] + [act("SELECT name FROM singer WHERE age > 20")], False),
        ("python", [act(a) for a in ("import math", "help(math.gcd)", "dir(math)", "print(x)")], True),
        ("python", [act(a) for a in ("import math", "help(math.gcd)", "dir(math)", "def f(): pass")], False),
        ("ctf", [act(a, "x") for a in (*BASH_LOOKS, "xxd chall.bin")] + [submit("submit picoCTF{x}")], False),
        ("ctf", [act(a, "x") for a in (*BASH_LOOKS, "xxd chall.bin")], True),
    ],
)
def test_paralysis(env: str, steps: list[Step], fires: bool) -> None:
    assert PARALYSIS_MIN_ACTIONS == 4
    assert ("paralysis" in failure_tags(episode(env, steps))) is fires


@pytest.mark.parametrize(
    ("steps", "fires"),
    [
        ([act("SELECT name FROM singer", "[('Joe',)]"), submit()], True),  # first output, then submit
        ([submit("submit picoCTF{guess}")], True),  # blind submit
        ([act("bad", "ERROR 1064", errored=True), act("SELECT 1", "[(1,)]"), submit()], True),
        ([act("SELECT 1", "[(1,)]"), act("SELECT count(*) FROM t", "[(3,)]"), submit()], False),  # checked
        ([act("SELECT 1", "[(1,)]"), act("SELECT 2", "[(2,)]")], False),  # never submitted (try_again)
    ],
)
def test_premature_submit(steps: list[Step], fires: bool) -> None:
    assert ("premature_submit" in failure_tags(episode("sql", steps))) is fires


def test_outcome_tags_and_solved_episodes() -> None:
    # excluded episodes (listed with their reason by the metrics) get no tags
    assert failure_tags(episode("bash", [act("rm a")] * 3, outcome="env_error")) == []
    assert failure_tags(episode("bash", [act("rm a")] * 3, outcome="model_error")) == []
    assert failure_tags(episode("bash", [act("rm a")] * 3, outcome="corrupt")) == []
    assert failure_tags(episode("bash", [act("ls")], outcome="timeout")) == []
    # a solved episode has no failure, whatever it did
    solved = episode("bash", [act("rm -rf /testbed/x", "")] * 3 + [submit()], outcome="solved")
    assert failure_tags(solved) == []
    # several tags at once, in FAILURE_TAGS order
    churned = episode("bash", [act("rm a"), act("rm a"), act("rm a")])
    assert failure_tags(churned) == ["action_churn", "destructive_mutation"]


def test_sandbox_destroyed_comes_from_the_envs_sandbox_lost_part() -> None:
    killed = episode("bash", [act("kill -9 -1", "", errored=True), act("ls", "", errored=True), submit()])
    assert "sandbox_destroyed" not in failure_tags(killed)
    killed.reward_parts = {"sandbox_lost": True, "sandbox_lost_reason": "the shell was killed"}
    assert "sandbox_destroyed" in failure_tags(killed)
    killed.outcome = "timeout"
    assert "sandbox_destroyed" in failure_tags(killed)
    killed.reward_parts = {"sandbox_lost": "yes"}  # only the env's boolean counts
    assert "sandbox_destroyed" not in failure_tags(killed)


def test_destructive_mutation_follows_the_task_files_where_the_env_measured_them() -> None:
    from intercode_agents.trajectory import TaskFiles

    hidden = act("echo cm0gL3Rlc3RiZWQvYQ== | base64 -d | sh", "")  # the text names nothing
    hidden.task_files = TaskFiles(destroyed=1, damaged=1, examples=["/testbed/a"])
    assert "destructive_mutation" in failure_tags(episode("bash", [hidden]))
    elsewhere = act("rm -rf /tmp/scratch", "")  # the text's rule would fire; no task file was touched
    elsewhere.task_files = TaskFiles()
    assert "destructive_mutation" not in failure_tags(episode("bash", [elsewhere]))

"""Every place where the ``intercode`` reward mode keeps a quirk of the original on purpose.

The ``intercode`` mode exists so that new scores compare with the paper's, so it reproduces how the
original InterCode scored, odd parts included. Each test below names one quirk that is kept, shows it,
and shows that ``strict`` mode does not have it. What the ``intercode`` mode does NOT keep: a gold
that cannot run is a corrupt task (unscored) in both modes, never a free win.
"""

from __future__ import annotations

from intercode_agents.envs.bash.reward import BashSide, bash_reward
from intercode_agents.envs.ctf.reward import ctf_reward
from intercode_agents.envs.python.reward import TestOutcome, python_reward
from intercode_agents.envs.sql.reward import SqlOutcome, sql_reward
from intercode_agents.sandbox import Change, PathState


def side(changes: list[tuple[str, str]], digests: dict[str, PathState], output: str) -> BashSide:
    return BashSide(tuple(Change(p, k) for k, p in changes), digests, output)  # type: ignore[arg-type]


def test_kept_bash_free_content_points_when_nothing_was_added_in_common():
    """git compared only untracked files both sides added: editing the wrong file kept 0.33."""
    agent = side([("C", "/testbed"), ("C", "/testbed/a")], {"/testbed/a": PathState("file", "x", 1)}, "ok")
    gold = side([("C", "/testbed"), ("C", "/testbed/b")], {"/testbed/b": PathState("file", "y", 1)}, "ok")
    assert bash_reward(agent, gold, "intercode").parts["file_content"] == 0.33
    assert bash_reward(agent, gold, "strict").parts["file_content"] == 0.0


def test_kept_bash_dotted_folder_names_compare_equal():
    """The original ran ``md5sum`` on names with a dot, which fails alike on any two folders."""
    made = [("C", "/testbed"), ("A", "/testbed/v1.0"), ("A", "/testbed/v1.0/x")]
    agent = side(made, {"/testbed/v1.0": PathState("dir", "a", 1)}, "")
    gold = side(made, {"/testbed/v1.0": PathState("dir", "b", 1)}, "")
    assert bash_reward(agent, gold, "intercode").parts["file_content"] == 0.33


def test_kept_bash_what_git_does_not_track_is_not_seen():
    """Owners, modes other than the execute bit, times and the ignored system folders (``/etc``,
    ``/root``, ``/usr``, ...) never count in ``git status``."""
    base = {"/testbed/a": PathState("file", "x", 1, 0o644, 0, 0, 1)}
    owned = {"/testbed/a": PathState("file", "x", 1, 0o600, 1000, 1000, 2)}
    extra = [("C", "/testbed"), ("C", "/testbed/a"), ("A", "/etc/new"), ("A", "/root/x")]
    agent = side(extra, owned, "ok")
    gold = side([], {}, "ok")
    old = bash_reward(agent, gold, "intercode", base_digests=base)
    assert old.reward == 1.0 and old.parts["extra_changes"] == 0
    assert bash_reward(agent, gold, "strict", base_digests=base).parts["extra_changes"] == 3
    executable = {"/testbed/a": PathState("file", "x", 1, 0o755, 0, 0, 1)}  # but +x is seen
    assert bash_reward(side(extra, executable, "ok"), gold, "intercode", base_digests=base).reward < 1.0


def test_kept_bash_an_empty_new_folder_is_not_listed():
    agent = side(
        [("C", "/testbed"), ("A", "/testbed/empty")], {"/testbed/empty": PathState("dir", "e", 0)}, ""
    )
    gold = side([], {}, "")
    assert bash_reward(agent, gold, "intercode").parts["extra_changes"] == 0
    assert bash_reward(agent, gold, "strict").parts["extra_changes"] == 1


def test_kept_sql_row_order_always_counts_through_kendall_tau():
    """The original scaled IoU by Kendall's tau even without ORDER BY; a reversed result is negative."""
    gold = SqlOutcome(rows=[(1,), (2,), (3,)])
    reversed_rows = SqlOutcome(rows=[(3,), (2,), (1,)])
    assert sql_reward(reversed_rows, gold, "SELECT x FROM t", "intercode").reward == -1.0
    assert sql_reward(reversed_rows, gold, "SELECT x FROM t", "strict").reward == 1.0


def test_kept_python_a_test_failed_like_the_gold_counts_as_passed():
    """The original compared each test's outcome with the gold's, pass or fail."""
    tests = ["assert f(1) == 2", "assert f(2) == 5"]
    gold = [TestOutcome(True), TestOutcome(False, "AssertionError")]
    agent = [TestOutcome(True), TestOutcome(False, "AssertionError")]
    assert python_reward(tests, agent, gold, "intercode").reward == 1.0
    assert python_reward(tests, agent, gold, "strict").reward == 1.0  # the gold-failed test is dropped
    both_fail = [TestOutcome(False, "AssertionError"), TestOutcome(False, "AssertionError")]
    assert python_reward(tests, both_fail, gold, "intercode").reward == 0.5


def test_kept_ctf_first_token_and_any_case():
    assert ctf_reward("PICOCTF{X} because reasons", "picoCTF{x}", "intercode").reward == 1.0
    assert ctf_reward("PICOCTF{X} because reasons", "picoCTF{x}", "strict").reward == 0.0

"""The Bash guard's flags, read from tree-sitter's parse of the command: what may destroy task files
is flagged with its path, what only reads (or writes elsewhere) is not."""

from __future__ import annotations

import pytest

from intercode_agents.envs.bash.guard import bash_flags

FLAGGED = [
    ("cat f > f", [("truncate", "/testbed/f")]),
    ("> /testbed/a.txt", [("truncate", "/testbed/a.txt")]),
    ("tee /testbed/f < /dev/null", [("truncate", "/testbed/f")]),
    ("cat <<EOF > /testbed/f\nhi\nEOF", [("truncate", "/testbed/f")]),
    ("rm -rf /testbed", [("recursive_delete", "/testbed")]),
    ("find /testbed -name '*.log' -delete", [("recursive_delete", "/testbed")]),
    ("cd /testbed && rm a", [("delete", "/testbed/a")]),
    ("sudo rm -f /testbed/f", [("delete", "/testbed/f")]),
    ("case $x in a) rm /testbed/f;; esac", [("delete", "/testbed/f")]),
    ("bash -c 'rm -rf /testbed'", [("recursive_delete", "/testbed")]),
    ("mv /testbed/a /testbed/b", [("move", "/testbed/a"), ("move", "/testbed/b")]),
    ("gzip /testbed/a.txt", [("move", "/testbed/a.txt")]),
    ("cp x /testbed/a", [("overwrite", "/testbed/a")]),
    ("sed -i s/a/b/ /testbed/f", [("in_place_edit", "/testbed/f")]),
    ("chmod 000 /testbed/a", [("mode_change", "/testbed/a")]),
    ('eval "$X"', [("opaque", None)]),
    ("python -c 'import os'", [("opaque", None)]),
]

CLEAN = [
    "ls -la /testbed",
    "grep -c ERROR /testbed/logs/app.log",
    "cat a.txt > /tmp/x",
    "echo hi >> /testbed/f",
    "echo > /dev/null",
    "rm /tmp/x",
]


@pytest.mark.parametrize(("command", "expected"), FLAGGED)
def test_destructive_commands_are_flagged_with_their_paths(
    command: str, expected: list[tuple[str, str | None]]
) -> None:
    assert [(f.kind, f.path) for f in bash_flags(command, ["/testbed"], cwd="/testbed")] == expected


@pytest.mark.parametrize("command", CLEAN)
def test_reads_and_writes_elsewhere_are_not_flagged(command: str) -> None:
    assert bash_flags(command, ["/testbed"], cwd="/testbed") == []

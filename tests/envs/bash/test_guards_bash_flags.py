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
    # paths are normalised before any rule: /dev/.. is no device
    ("printf x > /dev/../testbed/data/cities.csv", [("truncate", "/testbed/data/cities.csv")]),
    ("cd /testbed/data && printf x > fruits.csv", [("truncate", "/testbed/data/fruits.csv")]),
    ("cd /testbed && cd data/../logs && rm app.log", [("delete", "/testbed/logs/app.log")]),
    # a literal value in a variable is followed; a computed one is a dynamic path
    ('f=/testbed/a; printf x > "$f"', [("truncate", "/testbed/a")]),
    ("d=/testbed; rm -r ${d}/logs", [("recursive_delete", "/testbed/logs")]),
    ('f=$(ls); printf x > "$f"', [("truncate", None)]),
    ("f=/testbed/a; f=/tmp/b; printf x > $f", []),
    # interpreters reading code from a pipe, a here-document or a file
    ("echo cm0gLXJmIC90ZXN0YmVk | base64 -d | sh", [("opaque", None)]),
    ("python3 - <<EOF\nopen('/testbed/f', 'w')\nEOF", [("opaque", None)]),
    ("python3 /tmp/tool.py", [("opaque", None)]),
    ("perl /tmp/x.pl < /testbed/f", [("opaque", None)]),
    ("bash -s < /tmp/x.sh", [("opaque", None)]),
    ("bash <<'EOF'\nrm -rf /testbed\nEOF", [("recursive_delete", "/testbed")]),
    ('eval "$(echo cm0K | base64 -d)"', [("opaque", None)]),
    ("source /tmp/x.sh", [("opaque", None)]),
    ("awk '{ print > \"/testbed/out\" }' /testbed/f", [("opaque", None)]),
    ("awk -f /tmp/prog.awk /testbed/f", [("opaque", None)]),
    # writers by option or by position
    ("sort -o /testbed/data/fruits.csv /etc/hostname", [("overwrite", "/testbed/data/fruits.csv")]),
    ("sort -no/testbed/f x", [("overwrite", "/testbed/f")]),
    ("sort --output=/testbed/f x", [("overwrite", "/testbed/f")]),
    ("shuf -o /testbed/f x", [("overwrite", "/testbed/f")]),
    ("tar -cf /testbed/notes/todo.txt /etc/hostname", [("overwrite", "/testbed/notes/todo.txt")]),
    ("tar czf /testbed/a.tgz /etc", [("overwrite", "/testbed/a.tgz")]),
    ("tar --create --file=/testbed/a.tar /etc", [("overwrite", "/testbed/a.tar")]),
    ("tar -rf /testbed/a.tar /etc/hostname", [("overwrite", "/testbed/a.tar")]),
    ("dd if=/dev/zero of=/testbed/a count=1", [("overwrite", "/testbed/a")]),
    ("uniq /tmp/x /testbed/f", [("overwrite", "/testbed/f")]),
    ("install -m 644 /tmp/x /testbed/f", [("overwrite", "/testbed/f")]),
    ("cp -t /testbed /tmp/x", [("overwrite", "/testbed")]),
    ("wget -O /testbed/f http://x", [("overwrite", "/testbed/f")]),
    ("curl -o /testbed/f http://x", [("overwrite", "/testbed/f")]),
    ("find /tmp -fprint /testbed/list", [("overwrite", "/testbed/list")]),
    ("gawk -i inplace '{print}' /testbed/f", [("in_place_edit", "/testbed/f")]),
    ("unzip /tmp/a.zip -d /testbed", [("overwrite", "/testbed")]),
    ("patch /testbed/f /tmp/p.diff", [("in_place_edit", "/testbed/f")]),
    ("setsid rm /testbed/f", [("delete", "/testbed/f")]),
]

CLEAN = [
    "ls -la /testbed",
    "grep -c ERROR /testbed/logs/app.log",
    "cat a.txt > /tmp/x",
    "echo hi >> /testbed/f",
    "echo > /dev/null",
    "rm /tmp/x",
    "python3 --version",
    "sort /testbed/data/fruits.csv",
    "sort -o /tmp/sorted /testbed/data/fruits.csv",
    "tar -tf /testbed/a.tar",
    "tar -cf /tmp/x.tar /testbed",
    "awk -F, '$2 > 3 {print $1}' /testbed/data/fruits.csv",
    'f=/tmp/x; printf x > "$f"',
    "uniq /testbed/f",
    "printf x > /dev/null 2>/dev/stderr",
]


@pytest.mark.parametrize(("command", "expected"), FLAGGED)
def test_destructive_commands_are_flagged_with_their_paths(
    command: str, expected: list[tuple[str, str | None]]
) -> None:
    assert [(f.kind, f.path) for f in bash_flags(command, ["/testbed"], cwd="/testbed")] == expected


@pytest.mark.parametrize("command", CLEAN)
def test_reads_and_writes_elsewhere_are_not_flagged(command: str) -> None:
    assert bash_flags(command, ["/testbed"], cwd="/testbed") == []

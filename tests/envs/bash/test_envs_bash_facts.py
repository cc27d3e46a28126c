"""Deriving the gold side's digests from cached facts, without a gold container."""

from __future__ import annotations

from intercode_agents.envs.bash.facts import MISSING, GoldFacts, shallow
from intercode_agents.sandbox import Change, PathState

DIR_DEEP = PathState("dir", "d41d", 2)
FILE = PathState("file", "abc", 1)
FACTS = GoldFacts(
    output="",
    changes=(
        Change("/testbed", "C"),
        Change("/testbed/backup", "A"),
        Change("/testbed/backup/a.txt", "A"),
        Change("/testbed/old", "D"),
        Change("/testbed/notes.txt", "C"),
    ),
    digests={
        "/testbed": PathState("dir", "x", 9),
        "/testbed/backup": DIR_DEEP,
        "/testbed/backup/a.txt": FILE,
        "/testbed/notes.txt": PathState("file", "n2", 1),
    },
)
IMAGE = {("/testbed/other.txt", False): PathState("file", "o1", 1)}


def test_paths_the_gold_touched_use_its_digests_exact_match_first():
    assert FACTS.derive("/testbed/backup/a.txt", False, IMAGE) == FILE  # not "below an added folder"
    assert FACTS.derive("/testbed/backup", True, IMAGE) == DIR_DEEP
    assert FACTS.derive("/testbed/backup", False, IMAGE) == PathState("dir")  # shallow view of a folder
    assert FACTS.derive("/testbed/notes.txt", False, IMAGE) == PathState("file", "n2", 1)


def test_deleted_and_unlisted_paths_under_added_folders_are_missing():
    assert FACTS.derive("/testbed/old", False, IMAGE) == MISSING
    assert FACTS.derive("/testbed/old/inner.txt", False, IMAGE) == MISSING
    assert FACTS.derive("/testbed/backup/not-made.txt", False, IMAGE) == MISSING


def test_other_paths_come_from_the_pristine_image():
    assert FACTS.derive("/testbed/other.txt", False, IMAGE) == PathState("file", "o1", 1)
    assert FACTS.derive("/testbed/unknown.txt", False, IMAGE) is None  # the env probes the image for it


def test_shallow_keeps_files_and_hides_folder_contents():
    assert shallow(FILE, deep=False) == FILE
    assert shallow(DIR_DEEP, deep=False) == PathState("dir")
    assert shallow(DIR_DEEP, deep=True) == DIR_DEEP

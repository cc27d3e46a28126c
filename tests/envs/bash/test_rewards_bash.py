"""The Bash reward in both modes: hand-made cases with the numbers worked out, then real containers.

Reference values used below:
  erf(1) = 0.842701 -> 0.33 * (1 - 0.842701) = 0.051909 -> 0.05
  erf(2) = 0.995322 -> 0.33 * (1 - 0.995322) = 0.001544 -> 0.00
  TF-IDF (smooth idf, l2 norm) of "apple banana" vs "apple cherry": idf(apple) = ln(3/3) + 1 = 1,
  idf(banana) = idf(cherry) = ln(3/2) + 1 = 1.405465; cosine = 1 / (1 + 1.405465^2) = 0.336097
  -> 0.33 * 0.336097 = 0.110912 -> 0.11
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterator

import docker
import pytest
from docker.errors import ImageNotFound

from intercode_agents.envs.bash.changes import change_entries, changes_from_docker, paths_to_probe
from intercode_agents.envs.bash.reward import BashSide, answer_similarity, bash_reward
from intercode_agents.errors import ConfigError
from intercode_agents.paths import data_dir
from intercode_agents.reward import RewardResult
from intercode_agents.sandbox import Change, PathState
from intercode_agents.sandbox.path_states import parse_probe_output, probe_command


def ch(spec: str) -> tuple[Change, ...]:
    """'A /x, C /y' -> Change entries."""
    return tuple(Change(item.split()[1], item.split()[0]) for item in spec.split(",") if item.strip())  # type: ignore[arg-type]


def f(md5: str) -> PathState:
    return PathState("file", md5, 1)


DIR = PathState("dir")  # a folder probed shallow

# The changes Docker reported for a real session on the mini fixture (see test_probe_in_real_containers).
SESSION = ch(
    "C /tmp, A /tmp/scratch, C /testbed, C /testbed/data, D /testbed/data/cities.csv, A /testbed/emptynew,"
    "A /testbed/lnk, C /testbed/logs, D /testbed/logs/archive, A /testbed/new, A /testbed/new/sub,"
    "A /testbed/new/sub/f.txt, C /testbed/notes, C /testbed/notes/poem.txt, C /testbed/notes/todo.txt,"
    "C /usr, C /usr/sbin, A /usr/sbin/docker-init, C /root, A /root/.bash_history,"
    "A /testbed/bin, A /testbed/bin/t"
)
SESSION_DIGESTS = {
    "/tmp": DIR,
    "/tmp/scratch": f("s1"),
    "/testbed": DIR,
    "/testbed/data": DIR,
    "/testbed/emptynew": PathState("dir", "e0", 0),
    "/testbed/lnk": PathState("link", "l1", 1),
    "/testbed/logs": DIR,
    "/testbed/new": PathState("dir", "n1", 1),
    "/testbed/notes": DIR,
    "/testbed/notes/poem.txt": f("p0"),
    "/testbed/notes/todo.txt": f("t1"),
}


def test_intercode_entries_follow_git_status() -> None:
    entries = change_entries(SESSION, SESSION_DIGESTS, "intercode")
    assert entries == {
        ("/tmp/scratch", "??"),  # /tmp is not in docker.gitignore
        ("/testbed/data/cities.csv", "D"),
        ("/testbed/lnk", "??"),
        ("/testbed/logs/archive", "D"),
        ("/testbed/new/", "??"),  # an untracked folder collapses; the empty one is not listed
        ("/testbed/notes/poem.txt", "M"),
        ("/testbed/notes/todo.txt", "M"),
    }  # /usr, /root and any path with a "bin" component are ignored like the original's gitignore
    pristine = {"/testbed/notes/poem.txt": f("p0")}  # poem.txt was only touched
    assert ("/testbed/notes/poem.txt", "M") not in change_entries(
        SESSION, SESSION_DIGESTS, "intercode", pristine
    )


def test_strict_entries_see_everything_but_noise() -> None:
    entries = change_entries(SESSION, SESSION_DIGESTS, "strict")
    assert entries == {
        ("/tmp/scratch", "A"),
        ("/testbed/data/cities.csv", "D"),
        ("/testbed/emptynew", "A"),
        ("/testbed/lnk", "A"),
        ("/testbed/logs/archive", "D"),
        ("/testbed/new", "A"),
        ("/testbed/new/sub", "A"),
        ("/testbed/new/sub/f.txt", "A"),
        ("/testbed/notes/poem.txt", "C"),
        ("/testbed/notes/todo.txt", "C"),
        ("/testbed/bin", "A"),
        ("/testbed/bin/t", "A"),
    }  # changed folders (probed, or parents of other changes) drop out, as do docker-init and shell history


def test_paths_to_probe_per_mode() -> None:
    request = paths_to_probe(SESSION, (), "intercode")
    assert request.deep == ("/testbed/emptynew", "/testbed/lnk", "/testbed/new", "/tmp/scratch")
    assert request.shallow == (
        "/testbed",
        "/testbed/data",
        "/testbed/logs",
        "/testbed/notes",
        "/testbed/notes/poem.txt",
        "/testbed/notes/todo.txt",
        "/tmp",
    )
    strict = paths_to_probe(SESSION, ch("A /opt/x"), "strict")
    assert strict.deep == ()
    assert {"/testbed/new/sub/f.txt", "/usr", "/usr/sbin", "/opt/x", "/root"} <= set(strict.shallow)
    assert "/usr/sbin/docker-init" not in strict.shallow and "/testbed/data/cities.csv" not in strict.shallow


def side(changes: str, digests: dict[str, PathState], output: str | None) -> BashSide:
    return BashSide(ch(changes), digests, output)


def test_identical_sides_score_one_in_both_modes() -> None:
    agent = side("C /testbed, A /testbed/a.txt", {"/testbed": DIR, "/testbed/a.txt": f("x")}, "done here")
    for mode in ("intercode", "strict"):
        result = bash_reward(agent, agent, mode)
        assert result.reward == 1.0  # 0.01 + 0.33 + 0.33 + 0.33
        assert (result.parts["file_diff"], result.parts["file_content"], result.parts["answer"]) == (
            0.33,
            0.33,
            0.33,
        )


def test_formula_parts_by_hand() -> None:
    gold = side("C /testbed, A /testbed/a.txt", {"/testbed": DIR, "/testbed/a.txt": f("x")}, "apple cherry")
    agent = side("", {"/testbed": DIR, "/testbed/a.txt": PathState("missing")}, "apple banana")
    result = bash_reward(agent, gold, "intercode")
    # one missing change -> 0.05; no common added file -> 0.33; TF-IDF 0.336097 -> 0.11
    assert result.parts["missing_changes"] == 1
    assert (result.parts["file_diff"], result.parts["file_content"], result.parts["answer"]) == (
        0.05,
        0.33,
        0.11,
    )
    assert result.parts["answer_similarity"] == pytest.approx(0.3361, abs=1e-4)
    assert result.reward == 0.5  # 0.01 + 0.05 + 0.33 + 0.11
    strict = bash_reward(agent, gold, "strict")
    # strict checks the file the gold added: the agent lacks it -> 0/1 -> 0.00
    assert (strict.parts["file_diff"], strict.parts["file_content"], strict.reward) == (0.05, 0.0, 0.17)
    assert strict.parts["wrong_content_paths"] == "/testbed/a.txt (missing)"  # what differs, too


def test_answer_similarity_fallbacks() -> None:
    assert (
        answer_similarity("3\n", "3\n") == 1.0
    )  # one-character tokens: TF-IDF has no vocabulary -> equality
    assert answer_similarity("3\n", "4\n") == 0.0
    assert answer_similarity("", "") == 1.0
    assert answer_similarity("x y z words", None) == 0.0  # the gold produced nothing at all
    assert answer_similarity("apple banana", "apple cherry") == pytest.approx(0.336097, abs=1e-6)


TODO = "/testbed/notes/todo.txt"
POEM = "/testbed/notes/poem.txt"


def test_wrong_file_edited() -> None:
    gold = side(
        f"C /testbed/notes, C {TODO}", {"/testbed/notes": DIR, TODO: f("todo+1"), POEM: f("poem")}, ""
    )
    agent = side(
        f"C /testbed/notes, C {POEM}", {"/testbed/notes": DIR, TODO: f("todo"), POEM: f("poem+1")}, ""
    )
    old = bash_reward(agent, gold, "intercode")
    # miss 1 + extra 1 -> 0.00; no common untracked file -> a free 0.33; equal empty outputs -> 0.33
    assert (old.parts["file_diff"], old.parts["file_content"], old.parts["answer"], old.reward) == (
        0.0, 0.33, 0.33, 0.67,
    )  # fmt: skip
    new = bash_reward(agent, gold, "strict")
    assert (new.parts["file_diff"], new.parts["file_content"], new.reward) == (0.0, 0.0, 0.34)
    assert new.parts["missing_paths"] == f"C {TODO}" and new.parts["extra_paths"] == f"C {POEM}"
    assert new.parts["wrong_content_paths"] == f"{TODO} (content)"


def test_right_file_wrong_content() -> None:
    gold = side(f"C {TODO}", {TODO: f("todo+plumber")}, "")
    agent = side(f"C {TODO}", {TODO: f("todo+painter")}, "")
    assert bash_reward(agent, gold, "intercode").reward == 1.0  # the original never hashed modified files
    strict = bash_reward(agent, gold, "strict")
    assert (strict.parts["content_checked"], strict.parts["content_equal"], strict.reward) == (1, 0, 0.67)


def test_added_file_with_wrong_content_and_a_stray_scratch_file() -> None:
    gold = side("A /testbed/out.txt", {"/testbed/out.txt": f("good")}, "")
    agent = side("A /testbed/out.txt, A /tmp/notes", {"/testbed/out.txt": f("bad"), "/tmp/notes": f("n")}, "")
    for mode in ("intercode", "strict"):
        result = bash_reward(agent, gold, mode)
        # extra 1 -> 0.05; the common added file differs -> 0/1 -> 0.00; answers equal -> 0.33
        assert (result.parts["file_diff"], result.parts["file_content"], result.reward) == (0.05, 0.0, 0.39)
        assert result.parts["extra_changes"] == 1


def test_dotted_folder_quirk_only_in_intercode_mode() -> None:
    def made(md5: str) -> BashSide:
        return side(
            "A /testbed/v1.0, A /testbed/v1.0/x",
            {"/testbed/v1.0": PathState("dir", md5, 1), "/testbed/v1.0/x": f(md5)},
            "",
        )

    assert bash_reward(made("a"), made("b"), "intercode").reward == 1.0  # md5sum failed on both folders alike
    assert bash_reward(made("a"), made("b"), "strict").reward == 0.67  # the file inside differs


def test_intercode_content_check_is_the_originals_md5sum_and_missing_md5deep() -> None:
    # No dot in the path: the original ran `md5deep -r`, absent from its image, so the check passed.
    gold = side("A /testbed/out", {"/testbed/out": f("good")}, "")
    agent = side("A /testbed/out", {"/testbed/out": f("bad")}, "")
    assert bash_reward(agent, gold, "intercode").parts["file_content"] == 0.33
    assert bash_reward(agent, gold, "strict").parts["file_content"] == 0.0
    # A dot: `md5sum`, which follows a link to its target's content.
    copy = side("A /testbed/t.txt", {"/testbed/t.txt": f("todo")}, "")
    link_to = {
        "todo": PathState("link", "text-of-target-1", 1, followed="file todo"),
        "poem": PathState("link", "text-of-target-2", 1, followed="file poem"),
        "dangling": PathState("link", "text-of-target-3", 1, followed="missing"),
    }
    for target, expected in (("todo", 0.33), ("poem", 0.0), ("dangling", 0.0)):
        linked = side("A /testbed/t.txt", {"/testbed/t.txt": link_to[target]}, "")
        assert bash_reward(linked, copy, "intercode").parts["file_content"] == expected, target
        assert bash_reward(linked, copy, "strict").parts["file_content"] == 0.0  # a link is not a file
    # md5sum fails alike on two folders, and on a link to a folder.
    folder = side("A /testbed/v.d", {"/testbed/v.d": PathState("dir", "x", 1)}, "")
    to_folder = side("A /testbed/v.d", {"/testbed/v.d": PathState("link", "y", 1, followed="dir")}, "")
    assert bash_reward(to_folder, folder, "intercode").parts["file_content"] == 0.33


def test_gold_that_cannot_run_is_corrupt_in_both_modes() -> None:
    agent = side("", {}, "some words here")
    gold = side("", {}, None)
    for mode in ("intercode", "strict"):  # the original gave 0.67 here: an unscorable task, never a score
        result = bash_reward(agent, gold, mode)
        assert (result.corrupt, result.reward, result.parts["gold_failed"]) == (True, 0.0, True)
        assert "could not run" in (result.note or "")


def test_bad_inputs_are_rejected() -> None:
    assert changes_from_docker(None) == ()
    assert changes_from_docker([{"Path": "/x", "Kind": 1}]) == (Change("/x", "A"),)
    with pytest.raises(ConfigError, match="not a Docker container change"):
        changes_from_docker([{"Path": "/x", "Kind": 7}])
    with pytest.raises(ConfigError, match="unknown reward mode 'lenient'"):
        bash_reward(side("", {}, ""), side("", {}, ""), "lenient")
    with pytest.raises(ValueError, match="unexpected probe record"):
        parse_probe_output("file\tabc\n")  # a probe of the sandbox layer that went wrong


# -- real containers ------------------------------------------------------------------------------
LABELS = {"intercode-agents": "1"}


@pytest.fixture(scope="module")
def client() -> Iterator[docker.DockerClient]:
    cli = docker.from_env()
    yield cli
    cli.close()


@pytest.fixture(scope="module")
def mini_image(client: docker.DockerClient) -> Iterator[str]:
    try:
        client.images.get("intercode-agents/bash-mini:latest")
        yield "intercode-agents/bash-mini:latest"
        return
    except ImageNotFound:
        pass
    builder = client.containers.run(
        "intercode-agents/base:bookworm",
        ["bash", "-c", (data_dir("envs") / "bash" / "mini_fs.sh").read_text()],
        detach=True,
        network_mode="none",
        labels=LABELS,
    )
    repo, tag = "intercode-agents-test/bash-mini-reward", uuid.uuid4().hex[:8]
    try:
        assert builder.wait(timeout=60)["StatusCode"] == 0
        builder.commit(repository=repo, tag=tag)
    finally:
        builder.remove(force=True)
    yield f"{repo}:{tag}"
    client.images.remove(f"{repo}:{tag}", force=True)


def _score(
    client: docker.DockerClient, image: str, agent_cmd: str, gold_cmd: str, mode: str, pristine: bool = False
) -> tuple[RewardResult, dict[str, PathState]]:
    boxes = [
        client.containers.run(
            image, ["sleep", "infinity"], detach=True, network_mode="none", labels=LABELS, init=True
        )
        for _ in range(3 if pristine else 2)
    ]
    try:
        outputs = [
            box.exec_run(["bash", "-c", cmd]).output.decode()
            for box, cmd in zip(boxes[:2], (agent_cmd, gold_cmd), strict=True)
        ]
        changes = [changes_from_docker(client.api.diff(box.id)) for box in boxes[:2]]
        request = paths_to_probe(changes[0], changes[1], mode)
        digests = [
            parse_probe_output(box.exec_run(probe_command(request.deep, request.shallow)).output.decode())
            for box in boxes
        ]
        assert set(changes_from_docker(client.api.diff(boxes[0].id))) == set(
            changes[0]
        )  # the probe wrote nothing
        base = digests[2] if pristine else None
        result = bash_reward(
            BashSide(changes[0], digests[0], outputs[0]),
            BashSide(changes[1], digests[1], outputs[1]),
            mode,
            base_digests=base,
        )
        return result, digests[0]
    finally:
        for box in boxes:
            box.remove(force=True)


BACKUP_GOLD = "mkdir -p /testbed/backup && cp /testbed/notes/*.txt /testbed/backup/"


def test_real_containers_correct_and_partial_backup(client: docker.DockerClient, mini_image: str) -> None:
    for mode in ("intercode", "strict"):
        assert (
            _score(
                client,
                mini_image,
                "mkdir /testbed/backup; cp -p /testbed/notes/* /testbed/backup",
                BACKUP_GOLD,
                mode,
            )[0].reward
            == 1.0
        )
    partial = "mkdir -p /testbed/backup && cp /testbed/notes/todo.txt /testbed/backup/"
    old, _ = _score(client, mini_image, partial, BACKUP_GOLD, "intercode")
    # both show "?? /testbed/backup/", which the original never hashed (no dot: md5deep, which its image
    # lacked) -> diff 0.33, content 0.33, answer 0.33: the partial backup passes, as it did there
    assert (old.parts["file_diff"], old.parts["file_content"], old.reward) == (0.33, 0.33, 1.0)
    new, _ = _score(client, mini_image, partial, BACKUP_GOLD, "strict")
    # missing backup/poem.txt -> 0.05; 1 of 2 gold files right -> 0.33 * 1/2 = 0.165
    # (stored as 0.16500000000000001) -> 0.17; total 0.01 + 0.05 + 0.17 + 0.33
    assert (new.parts["file_diff"], new.parts["file_content"], new.reward) == (0.05, 0.17, 0.56)


def test_real_containers_links_are_followed_in_intercode_mode(
    client: docker.DockerClient, mini_image: str
) -> None:
    gold = "cp /testbed/notes/todo.txt /testbed/notes/t.txt"
    same, digests = _score(client, mini_image, "ln -s todo.txt /testbed/notes/t.txt", gold, "intercode")
    assert digests["/testbed/notes/t.txt"].kind == "link"
    assert (digests["/testbed/notes/t.txt"].followed or "").startswith("file ")
    assert (same.parts["content_checked"], same.parts["content_equal"], same.reward) == (1, 1, 1.0)
    other, _ = _score(client, mini_image, "ln -s poem.txt /testbed/notes/t.txt", gold, "intercode")
    assert (other.parts["content_equal"], other.reward) == (0, 0.67)
    dangling, digests = _score(
        client, mini_image, "ln -s nowhere.txt /testbed/notes/t.txt", gold, "intercode"
    )
    assert digests["/testbed/notes/t.txt"].followed == "missing" and dangling.reward == 0.67


def test_real_containers_touch_only_and_odd_names(client: docker.DockerClient, mini_image: str) -> None:
    gold = "echo 'call the plumber' >> /testbed/notes/todo.txt"
    agent = gold + "; touch /testbed/notes/poem.txt; printf 'x' > $'/testbed/odd name\\twith tab'"
    without_base, digests = _score(client, mini_image, agent, gold, "intercode")
    odd = dataclasses.replace(digests["/testbed/odd name\twith tab"], mtime=None)
    assert odd == PathState("file", "9dd4e461268c8034f5c8564e155c67a6", 1, 0o644, 0, 0)  # md5("x")
    assert without_base.parts["extra_changes"] == 2  # the odd file, and poem.txt counted as modified
    with_base, _ = _score(client, mini_image, agent, gold, "intercode", pristine=True)
    assert with_base.parts["extra_changes"] == 1  # the pristine digest shows poem.txt is unchanged
    assert with_base.parts["extra_paths"] == "?? /testbed/odd name\twith tab"

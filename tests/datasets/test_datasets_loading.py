"""Loading, selecting and looking up tasks from the InterCode data copy and the mini sets."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from intercode_agents.datasets import get_task, load_tasks, resolve_data_root, select_tasks
from intercode_agents.datasets.select import MAX_SELECTOR_CHARS, MAX_SELECTOR_TERMS
from intercode_agents.envs.ctf.tasks import ctf_asset_files
from intercode_agents.errors import ConfigError, DatasetError, UnknownTask
from tests import ROOT

SHARED_DATA = ROOT.parent / "shared" / "intercode-data"
DATA = Path(os.environ.get("INTERCODE_DATA") or SHARED_DATA)
needs_data = pytest.mark.skipif(not (DATA / "data").is_dir(), reason=f"no InterCode data copy at {DATA}")


@pytest.fixture(autouse=True)
def _data_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INTERCODE_DATA", str(DATA))


@needs_data
def test_resolve_data_root_prefers_argument_then_env(tmp_path: Path) -> None:
    assert resolve_data_root() == DATA.resolve()
    assert resolve_data_root(DATA, families=["sql"]) == DATA.resolve()
    with pytest.raises(DatasetError, match=r"lacks the InterCode task files data/nl2bash/nl2bash_fs_1\.json"):
        resolve_data_root(tmp_path)


def test_resolve_data_root_rejects_bad_env_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("INTERCODE_DATA", str(tmp_path / "nowhere"))
    with pytest.raises(DatasetError, match=r"\$INTERCODE_DATA .* is not a directory"):
        resolve_data_root()
    with pytest.raises(ConfigError, match="unknown task family 'perl'"):
        resolve_data_root(DATA, families=["perl"])


@needs_data
@pytest.mark.parametrize(
    ("env", "splits", "default_count"),
    [
        ("bash", {"fs1": 60, "fs2": 53, "fs3": 60, "fs4": 27, "test": 24, "mini": 8}, 200),
        ("sql", {"spider": 1034, "wikisql": 196, "mini": 6}, 1034),
        ("python", {"mbpp": 974, "humaneval": 164, "mini": 5}, 974),
        ("ctf", {"picoctf": 100, "mini": 5}, 94),  # 6 picoCTF tasks cannot run offline
    ],
)
def test_counts_per_split_and_default_selection(env: str, splits: dict[str, int], default_count: int) -> None:
    tasks = load_tasks(env)
    counts: dict[str, int] = {}
    for task in tasks:
        counts[task.split] = counts.get(task.split, 0) + 1
    assert counts == splits
    assert len({t.id for t in tasks}) == len(tasks)
    assert len(select_tasks(env)) == default_count


@needs_data
def test_task_fields_per_env() -> None:
    bash = get_task("bash/fs2/0")
    assert (bash.env, bash.split, bash.image, bash.group) == ("bash", "fs2", "bash-fs2", {"fs": "fs2"})
    assert bash.gold == 'grep -inr "Hello" /system/folder1'
    assert bash.meta["fs_script"].endswith("docker/bash_scripts/setup_nl2b_fs_2.sh")
    assert get_task("bash/test/3").image == "bash-fstest"

    sql = get_task("sql/spider/0")
    assert sql.group == {"db": "poker_player", "hardness": "medium"}
    assert sql.meta["db_tables"]["people"][0] == "People_ID"
    assert get_task("sql/wikisql/0").group == {"db": "dev"}

    mbpp = get_task("python/mbpp/18")  # its gold defines three helpers before the function the tests call
    assert mbpp.meta["entry_point"] == "remove_dirty_chars"
    assert mbpp.meta["tests"][0].startswith("assert remove_dirty_chars(")

    ctf = get_task("ctf/0")
    assert ctf.group == {"tag": "Reverse Engineering"}
    assert Path(ctf.meta["asset_dir"]) == DATA.resolve() / "data/ctf/task_assets/0"


@needs_data
def test_ctf_unavailable_tasks_and_assets() -> None:
    reasons = {t.id: t.unavailable for t in load_tasks("ctf") if t.unavailable}
    assert sorted(reasons) == ["ctf/1", "ctf/14", "ctf/65", "ctf/66", "ctf/70", "ctf/71"]
    assert "downloads from the internet" in reasons["ctf/14"]
    assert "'Forensics is fun.pptm'" in reasons["ctf/71"]
    assert "ctf/65" not in {t.id for t in select_tasks("ctf")}
    assert "ctf/65" in {t.id for t in select_tasks("ctf", include_unavailable=True)}

    files = ctf_asset_files(get_task("ctf/33"))  # ships solution/solution.py next to the puzzle
    assert [f.name for f in files] == ["level4.flag.txt.enc", "level4.hash.bin", "level4.py"]
    assert ctf_asset_files(get_task("ctf/16")) == []  # only a .placeholder
    with pytest.raises(DatasetError, match="only CTF tasks have assets"):
        ctf_asset_files(get_task("bash/mini/0"))


@needs_data
def test_selector_terms_union_and_filters_intersect() -> None:
    ids = [t.id for t in select_tasks("bash", "fs4,bash/fs1/0,bash/fs1/1?")]
    assert ids[:11] == ["bash/fs1/0", *(f"bash/fs1/{n}" for n in range(10, 20))]
    assert len(ids) == 11 + 27

    easy_poker = select_tasks("sql", "hardness=easy,db=poker_player")
    assert easy_poker and all(t.group == {"db": "poker_player", "hardness": "easy"} for t in easy_poker)
    assert {t.group["hardness"] for t in select_tasks("sql", "hardness=easy|hard")} == {"easy", "hard"}
    assert [t.id for t in select_tasks("sql", "mini,hardness=hard")] == ["sql/mini/5"]

    forensics = select_tasks("ctf", "tag=forensics")  # case-insensitive
    assert forensics and all("Forensics" in t.meta["tags"] for t in forensics)
    assert [t.id for t in select_tasks("bash", "fs=fs2")] == [f"bash/fs2/{n}" for n in range(53)]


@needs_data
def test_selector_errors_are_specific() -> None:
    with pytest.raises(
        ConfigError, match=r"unknown split 'fs9' for env 'bash'; splits: fs1, fs2, fs3, fs4, test"
    ):
        select_tasks("bash", "fs9")
    with pytest.raises(ConfigError, match=r"no filter on 'level' .* keys here: db, hardness"):
        select_tasks("sql", "level=easy")
    with pytest.raises(ConfigError, match="matches no bash task"):
        select_tasks("bash", "bash/fs1/9*9")
    with pytest.raises(ConfigError, match="does not belong to env 'bash'"):
        select_tasks("bash", "sql/spider/1")
    with pytest.raises(UnknownTask, match="did you mean bash/fs1/9"):
        select_tasks("bash", "bash/fs1/999")
    with pytest.raises(ConfigError, match="unknown env 'perl'"):
        select_tasks("perl")


@needs_data
def test_filters_match_public_fields_only() -> None:
    # A filter on a hidden field would answer guesses about it: with tests filterable, "== False"
    # selected python/mbpp/3 and "== True" did not, which told the first test's expected value.
    for guess in ("False", "True"):
        with pytest.raises(ConfigError, match=r"no filter on 'tests' .* public fields only"):
            select_tasks("python", f"python/mbpp/3,tests=assert is_not_prime(2) == {guess}")
    for env, key in (
        ("python", "test_setup_code"),
        ("bash", "fs_script"),
        ("ctf", "hint"),
        ("sql", "db_tables"),
    ):
        with pytest.raises(ConfigError, match=f"no filter on '{key}'"):
            select_tasks(env, f"{key}=x")
    # the public ones still select: groups, the entry point, CTF tags
    assert [t.id for t in select_tasks("python", "entry_point=is_not_prime")] == ["python/mbpp/3"]
    tagged = select_tasks("ctf", "tags=forensics")
    assert tagged and all(any(tag.lower() == "forensics" for tag in t.meta["tags"]) for t in tagged)


@needs_data
def test_selectors_are_bounded_with_a_clear_error() -> None:
    many = ",".join(f"python/mbpp/{n}" for n in range(11, 11 + MAX_SELECTOR_TERMS + 1))
    with pytest.raises(
        ConfigError, match=rf"has {MAX_SELECTOR_TERMS + 1} terms; at most {MAX_SELECTOR_TERMS}"
    ):
        select_tasks("python", many)
    with pytest.raises(ConfigError, match=rf"characters long; at most {MAX_SELECTOR_CHARS}"):
        select_tasks("python", "mbpp," + "x" * MAX_SELECTOR_CHARS)
    # at the bound, a selector of ids, globs or positions costs little (each term is a lookup)
    for terms in (
        [f"python/mbpp/{n}" for n in range(11, 11 + MAX_SELECTOR_TERMS)],
        [f"python/mbpp/#{n}" for n in range(MAX_SELECTOR_TERMS)],
        [f"sql/spider/{n}*" for n in range(MAX_SELECTOR_TERMS)],
    ):
        env = terms[0].split("/")[0]
        started = time.perf_counter()
        assert select_tasks(env, ",".join(terms))
        assert time.perf_counter() - started < 5.0


@needs_data
def test_get_task_hints_close_ids() -> None:
    with pytest.raises(UnknownTask, match=r"unknown task 'sql/spidr/3'; did you mean sql/spider/3"):
        get_task("sql/spidr/3")
    with pytest.raises(UnknownTask, match="ids start with an env name"):
        get_task("perl/1")


def test_mini_sets_need_no_intercode_data(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("INTERCODE_DATA", str(tmp_path))  # an empty folder: the InterCode files are absent
    assert [t.id for t in select_tasks("bash", "mini")][:2] == ["bash/mini/0", "bash/mini/1"]
    assert get_task("sql/mini/5").gold.startswith("WITH member_pages AS")
    assert get_task("python/mini/4").meta["test_setup_code"] == "SAMPLE = 'aaabcca'"
    ctf = get_task("ctf/mini/2")
    assert (ctf.image, ctf.group, ctf.unavailable) == ("ctf", {"tag": "Forensics"}, None)
    assert [f.name for f in ctf_asset_files(ctf)] == ["vault.zip"]
    with pytest.raises(DatasetError, match="lacks the InterCode task files"):
        select_tasks("bash")  # the default set does need them


@needs_data
def test_tasks_are_loaded_once_and_frozen() -> None:
    first, second = get_task("python/mbpp/11"), get_task("python/mbpp/11")
    assert first is second
    with pytest.raises(ValueError, match="frozen"):
        first.gold = "x"  # type: ignore[misc]

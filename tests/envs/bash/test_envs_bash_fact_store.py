"""The Bash gold's facts kept on disk: they survive the process, and nothing stale or torn is read."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from intercode_agents import make_env
from intercode_agents.envs.bash.fact_store import FactStore, code_version, fact_store
from intercode_agents.envs.bash.facts import GoldFacts
from intercode_agents.errors import ConfigError
from intercode_agents.sandbox import Change, PathState

FACTS = GoldFacts(
    output="a\nb\n",
    changes=(Change("/testbed", "C"), Change("/testbed/new", "A"), Change("/testbed/old", "D")),
    digests={"/testbed/new": PathState("file", "0cc175b9c0f1b6a831c399e269772661", 1)},
)
IMAGE = "sha256:" + "ab" * 32


def test_facts_and_digests_survive_a_new_store_on_the_same_folder(tmp_path: Path):
    FactStore(tmp_path).put_facts(IMAGE, "ls -l", FACTS)
    FactStore(tmp_path).put_digests(IMAGE, {("/etc/motd", False): PathState("file", "ff", 1)})
    FactStore(tmp_path).put_digests(IMAGE, {("/srv", True): PathState("dir", "ee", 0)})
    later = FactStore(tmp_path)
    assert later.facts(IMAGE, "ls -l") == FACTS
    assert later.facts(IMAGE, "ls -la") is None
    assert later.facts("sha256:" + "cd" * 32, "ls -l") is None  # another image
    assert later.digests(IMAGE) == {
        ("/etc/motd", False): PathState("file", "ff", 1),
        ("/srv", True): PathState("dir", "ee", 0),
    }
    assert all(p.parent.name == code_version() for p in tmp_path.glob("*/*"))


def test_torn_or_foreign_entries_are_ignored(tmp_path: Path):
    store = FactStore(tmp_path)
    store.put_facts(IMAGE, "ls -l", FACTS)
    store.put_digests(IMAGE, {("/a", False): PathState("missing")})
    [gold_file] = tmp_path.glob("*/*/gold-*.json")
    gold_file.write_text(gold_file.read_text()[:40])  # torn
    digests = next(tmp_path.glob("*/*/digests.jsonl"))
    digests.write_text(digests.read_text() + '["/b", false, ["file"\n["/c", true, ["nonsense", null, 0]]\n')
    later = FactStore(tmp_path)
    assert later.facts(IMAGE, "ls -l") is None
    assert later.digests(IMAGE) == {("/a", False): PathState("missing")}
    # An entry written for another command (a hash collision) is not this command's.
    raw = json.loads(json.dumps({"gold": "other", "output": "", "changes": [], "digests": {}}))
    gold_file.write_text(json.dumps(raw))
    assert FactStore(tmp_path).facts(IMAGE, "ls -l") is None


def test_unknown_cache_kinds_are_refused():
    with pytest.raises(ConfigError, match="facts_cache"):
        fact_store("sometimes")
    with pytest.raises(ConfigError, match="facts_cache"):
        make_env("bash", facts_cache="sometimes")


async def test_a_new_process_scores_from_the_disk_without_running_the_gold(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("INTERCODE_AGENTS_CACHE", str(tmp_path))
    async with make_env("bash") as env:  # writes files: the facts include digests
        await env.reset(task_id="bash/mini/4")
        await env.gym.step("mkdir -p /testbed/backup && cp /testbed/notes/*.txt /testbed/backup/")
        *_, info = await env.gym.step("submit")
        assert info["reward_parts"]["file_diff"] == 0.33
    assert await asyncio.to_thread(lambda: list(tmp_path.glob("bash-facts/*/*/gold-*.json")))

    async with make_env("bash") as env:
        env.facts = FactStore(tmp_path / "bash-facts")  # what a new process would open

        async def no_gold_sandbox(image: str):
            raise AssertionError(f"a gold sandbox of {image} was requested")

        monkeypatch.setattr(env, "borrow", no_gold_sandbox)
        await env.reset(task_id="bash/mini/4")
        await env.gym.step("mkdir -p /testbed/backup && cp /testbed/notes/*.txt /testbed/backup/")
        _, reward, *_ = await env.gym.step("submit")
        assert reward == 1.0

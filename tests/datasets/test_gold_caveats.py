"""The declared list of golds that cannot be scored as the paper scored them is complete and true.

Two checks keep it so. Every Bash gold that consults something besides its task's files (a time
test, the clock, the host, processes, the disk, the network, an archive's listing, a background job,
the whole file system) must be declared in :mod:`intercode_agents.datasets.gold_caveats`, or be named
below as inspected and comparable, with the reason. And every gold, replayed in paper execution,
must score one, but for the declared volatile and corrupt ones: the paper clock makes the time tests
stable there.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from intercode_agents import make_env
from intercode_agents.datasets import load_tasks
from intercode_agents.datasets.gold_caveats import all_caveats, corrupt_reason, ids_with, left_out_of_rescore

CAVEATS = all_caveats()

# What a gold may consult besides its task's files.
INDICATORS = {
    "a time test": r"-[acm](min|time)\b|-newer|-daystart",
    "the clock": r"\bdate\b|\bcal\b",
    "the host": r"hostname|\buname\b|\benv\b|/etc/hosts|\bmount\b|\bbind\b|/var/log",
    "processes": r"\bps\b|pstree|\$\$|\bPPID\b|(^|[|;&(]\s*)w\b|\bwho\b|\buptime\b",
    "the disk": r"\bdf\b|\bdu\b",
    "the network": r"\bcurl\b|\bwget\b|\bdig\b|\bping\b|\bnslookup\b|\bssh\b|\bnc\b",
    "an archive listing": r"\btar\s+-?\w*v",
    "a background job": r"&\s*$",
    "the whole file system": r"find\s+(/\S*\s+)*/(\s|$)|\$\{?DIRECTORY|grep -r \S+ \*",
}
# Golds that match an indicator, inspected and found to score here as they did in the original.
COMPARABLE = {
    "bash/fs1/6": "finds *.txt under / too: the same files in the agent's and the gold's sandboxes",
    "bash/fs1/9": "counts the lines of pstree's first line: always 1",
    "bash/fs1/47": "find -mtime +2 selects a file the fixture dated 2022: old at any time",
    "bash/fs2/17": "find -mtime +25 selects a file the fixture dated March 2023: old at any time",
    "bash/fs1/51": "du -Sh of single files: their own blocks, which git's rewrites in the original kept",
    "bash/fs3/37": "du -c of the one file files.txt names: its own blocks",
    "bash/fs3/47": "du -sb of a file: its size in bytes",
    "bash/test/4": "du -b of files: their sizes in bytes",
    "bash/fs4/0": "uname -v: the agent's and the gold's sandboxes share the host's kernel, as they did",
    "bash/fs4/9": "bind -P: bash's own key bindings, the same in both sandboxes",
    "bash/fs4/10": "bind -l: bash's own functions, the same in both sandboxes",
    "bash/fs4/11": "mount | grep smbfs: empty in both, as it was",
    "bash/fs4/16": "df . | awk '{print $1}': the file system's name (overlay), not a figure",
    "bash/fs4/17": "env's variable names with an H: the same in both sandboxes, and as there",
    "bash/fs4/18": "who: nobody is logged in, here as there",
    "bash/fs4/22": "who | wc -l: nobody is logged in, here as there",
    "bash/fs4/23": "cal -3 12 2120: a fixed month",
}


def _bash_golds() -> dict[str, str]:
    return {t.id: t.gold for t in load_tasks("bash") if t.split != "mini"}


def test_every_gold_that_consults_more_than_its_files_is_declared() -> None:
    undeclared = {}
    for task_id, gold in _bash_golds().items():
        found = [name for name, pattern in INDICATORS.items() if re.search(pattern, gold)]
        if found and task_id not in CAVEATS and task_id not in COMPARABLE:
            undeclared[task_id] = (found, gold)
    assert undeclared == {}


def test_the_declarations_name_real_tasks_and_say_why() -> None:
    ids = set(_bash_golds()) | {t.id for t in load_tasks("sql")}
    assert set(CAVEATS) <= ids and set(COMPARABLE) <= ids and not set(CAVEATS) & set(COMPARABLE)
    assert all(c.reason for c in CAVEATS.values())
    assert corrupt_reason("bash/fs2/49") and corrupt_reason("bash/fs2/48") is None
    assert left_out_of_rescore("bash/fs2/18", "paper") is None  # the paper clock reproduces it
    assert left_out_of_rescore("bash/fs2/18", "session") is not None
    assert left_out_of_rescore("bash/fs2/48", "paper") is not None  # the original's folder order
    assert left_out_of_rescore("bash/fs1/55", "session") and not left_out_of_rescore("bash/fs1/55", "paper")


@pytest.mark.parametrize("reward", ["intercode", "strict"])
async def test_every_declared_corrupt_task_is_corrupt_in_both_reward_modes(reward: str) -> None:
    async with make_env("bash", reward=reward) as env:
        for task_id in sorted(ids_with("corrupt", prefix="bash/")):
            await env.reset(task_id=task_id)
            result = await env.evaluate()
            assert result.corrupt and result.parts["corrupt_reason"] == corrupt_reason(task_id)


@pytest.mark.slow
async def test_in_paper_execution_every_gold_scores_one_but_the_declared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from intercode_agents.runner.config import EvalConfig
    from intercode_agents.runner.eval import run_eval
    from intercode_agents.runner.gold import classify

    monkeypatch.setenv("INTERCODE_AGENTS_CACHE", str(tmp_path / "cache"))  # every gold runs
    result = await run_eval(
        EvalConfig(
            env="bash",
            model="gold",
            selector="fs1,fs2,fs3,fs4,test",
            execution="paper",
            concurrency=4,
            out_dir=tmp_path / "run",
            progress=False,
        )
    )
    report = classify("bash", "intercode", result.records, result.wall_s, 4)
    assert report.total == 224
    assert {r.task_id for r in report.failed} <= ids_with("volatile", prefix="bash/"), report.failed
    corrupt = ids_with("corrupt", "defect", prefix="bash/", execution="paper")
    assert {r.task_id for r in report.corrupt} == corrupt, report.corrupt

"""Issue 13, findings 4 and 5: strict Bash sees what a task asks to change, and every write anywhere.

Real envs and images: each case is a gold, a wrong agent and (where it exists) a right one.
"""

from __future__ import annotations

import pytest

from intercode_agents import make_env
from intercode_agents.datasets import Task, get_task

LOG = "/testbed/logs/app.log"


def mini(gold: str) -> Task:
    return Task(
        id="bash/mini/custom",
        env="bash",
        split="mini",
        query="q",
        gold=gold,
        image="bash-mini",
        group={},
        meta={},
    )


async def score(task: Task, actions: list[str], mode: str = "strict"):
    async with make_env("bash", reward=mode, facts_cache="process") as env:
        await env.reset(task=task)
        for action in actions:
            await env.gym.step(action)
        return await env.evaluate()


COUNT_PHP = 'find /testbed -name "*.php" | wc -l'
CHMOD_PHP = 'find /testbed -name "*.php" -exec chmod 755 {} \\; -exec /bin/echo {} \\; | wc -l'


@pytest.mark.parametrize("mode", ["strict", "intercode"])
async def test_a_mode_change_the_task_asks_for_is_seen(mode):
    task = get_task("bash/fs1/8")  # chmod every .php file to 755 and count them
    counting_only = await score(task, [COUNT_PHP], mode)
    assert counting_only.reward < 1.0 and counting_only.parts["missing_changes"] == 2
    assert (await score(task, [CHMOD_PHP], mode)).reward == 1.0


CASES = {
    "owner": ("chown 1000:1000 {log}; echo done", "echo done", "owner 0:0, not 1000:1000"),
    "mode of a folder": ("chmod 700 /testbed/logs; echo done", "echo done", None),
    "symlink target": (
        "ln -s /etc /testbed/current; echo ok",
        "ln -s /tmp /testbed/current; echo ok",
        "target",
    ),
    "file type": ("rm {log} && mkdir {log}; echo ok", "echo ok", None),
    "touched": ("touch {log}; echo ok", "echo ok", None),
}


@pytest.mark.parametrize("case", sorted(CASES))
async def test_strict_sees_owners_types_link_targets_and_touches(case):
    gold, wrong, why = CASES[case]
    gold, wrong = gold.format(log=LOG), wrong.format(log=LOG)
    task = mini(gold)
    bad = await score(task, [wrong])
    assert bad.reward < 1.0, (case, bad.parts)
    if why:
        assert why in str(bad.parts["wrong_content_paths"]), bad.parts
    assert (await score(task, [gold])).reward == 1.0


@pytest.mark.parametrize(
    "extra", ["echo x > /tmp/x", "echo x > /dev/shm/x", "echo planted > /etc/hostname", "chmod 600 /etc/motd"]
)
async def test_strict_counts_writes_anywhere(extra):
    task = get_task("bash/mini/0")
    clean = await score(task, [task.gold])
    dirty = await score(task, [extra, task.gold])
    assert clean.reward == 1.0 and dirty.reward < 1.0 and dirty.parts["extra_changes"] >= 1


async def test_a_file_made_and_deleted_again_costs_nothing():
    task = get_task("bash/mini/0")
    r = await score(
        task, ["touch /testbed/scratch /dev/shm/scratch && rm /testbed/scratch /dev/shm/scratch", task.gold]
    )
    assert r.reward == 1.0, r.parts

"""On an engine whose host cannot read the sandbox's files, the Bash env's scoring reads them with
programs inside the sandbox: an agent that changed those programs is scored 0, with the reason,
while the same episode on the local engine (read from the host) is scored as usual."""

from __future__ import annotations

import pytest

from intercode_agents import make_env
from intercode_agents.datasets import get_task

SLOW_PATHS = "unix:///var/run/docker.sock?fast_paths=false"  # the local engine, as a remote one is read
TASK = "bash/mini/6"  # writes a total to /testbed/data/total.txt: scored on the file's digest


async def play(backend: str | None, *extra: str) -> tuple[float, dict]:
    task = get_task(TASK)
    async with make_env("bash", **({"backend": backend} if backend else {})) as env:
        await env.reset(task=task)
        await env.gym.step(task.gold)
        for action in extra:
            await env.gym.step(action)
        _, reward, done, _, info = await env.gym.step("submit")
        assert done
        return reward, info


@pytest.mark.parametrize(
    "tamper",
    [
        "cp /bin/true /usr/bin/md5sum",  # a digest program that prints nothing
        # a find ahead of the real one on PATH
        "printf '#!/bin/sh\\necho 0\\n' > /usr/local/bin/find && chmod +x /usr/local/bin/find",
        "echo /tmp/x.so > /etc/ld.so.preload",  # the loader's preload list
    ],
)
async def test_changed_inside_programs_earn_nothing_where_they_would_be_used(tamper: str) -> None:
    reward, info = await play(SLOW_PATHS, tamper)
    assert reward == 0.0
    parts = info["reward_parts"]
    assert parts["sandbox_lost"] is True and "programs were changed" in parts["sandbox_lost_reason"]


async def test_the_same_episode_is_scored_as_usual_where_the_host_reads_the_files() -> None:
    assert (await play(SLOW_PATHS))[0] == 1.0  # an honest episode passes the check
    assert (await play(None, "cp /bin/true /usr/bin/md5sum"))[0] == 1.0  # no program of its is used

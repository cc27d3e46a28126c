"""Issue findings 1 and 2: nothing an episode leaves in its sandbox reaches a later episode or a gold.

An agent's sandbox is never handed out again (so every channel, even the ones no check can read, is
closed by construction); a sandbox that only the harness used is recycled for the harness only, and
only when its fingerprint matches on every channel.
"""

from __future__ import annotations

import asyncio
import re

import pytest

from intercode_agents import make_env
from intercode_agents.envs.bash.facts import gold_facts
from intercode_agents.errors import IntercodeError
from intercode_agents.sandbox import RUN_ID, SandboxPool
from intercode_agents.sandbox.conformance.fixtures import PLANTS as CHANNEL_PLANTS
from tests.docker_helpers import SLEEPER, containers_of_run

# One command per channel through which a process could leave state for a later one: the
# conformance suite's channels but those LOOK cannot read (changed back, or the init's limits), and
# the hosts file left changed.
UNREAD = {"overlay-changed-back", "hosts-file-restored", "init-limits"}
PLANTS = {k: v for k, v in CHANNEL_PLANTS.items() if k not in UNREAD} | {
    "hosts-file": "echo '10.0.0.1 planted' >> /etc/hosts",
}
# Everything a later episode could look at, printed in a stable order.
LOOK = (
    "cat /tmp/planted.txt /dev/shm/planted.txt /dev/planted /sys/fs/cgroup/planted 2>/dev/null; "
    "cat /etc/hostname /etc/hosts; ipcs; ls -A /dev/mqueue /dev/shm; ps -eo pid,args; ulimit -n; "
    "prlimit --pid $PPID --nofile; echo pid=$$"
)


async def _look_after(plants: list[str]) -> tuple[str, list[str]]:
    """Plant in one episode, then look from the next one on the same env, with a pool of one: the
    next episode gets the sandbox that came back if the pool deems it reusable."""
    async with make_env("bash", facts_cache="process", pool_size=1) as env:
        await env.reset(task_id="bash/mini/0")
        ids = [env.sandbox.id]
        for command in plants:
            await env.gym.step(command)
        await env.return_sandbox()
        await (await env.pool("bash-mini")).drain()  # the release is judged before the next reset
        await env.reset(task_id="bash/mini/0")
        ids.append(env.sandbox.id)
        seen, *_ = await env.gym.step(LOOK)
    return seen, ids


@pytest.mark.parametrize("channel", sorted(PLANTS))
async def test_state_planted_through_one_channel_never_reaches_the_next_episode(channel):
    """One channel at a time: a reuse check that sees only some channels passes the sandbox on."""
    fresh, _ = await _look_after([])
    seen, ids = await _look_after([PLANTS[channel]])
    assert ids[0] != ids[1]
    assert "planted" not in seen and "sleep 1000" not in seen and "77" not in seen
    # The next episode cannot tell its sandbox from a never-used one (PIDs aside: they vary with how
    # fast the engine started the container's processes, not with anything an episode did).
    assert _no_pids(seen) == _no_pids(fresh)


async def test_state_planted_through_every_channel_at_once_never_reaches_the_next_episode():
    fresh, _ = await _look_after([])
    seen, _ = await _look_after(list(PLANTS.values()))
    assert _no_pids(seen) == _no_pids(fresh)


def _no_pids(text: str) -> str:
    return re.sub(r"(?m)^\s*\d+ |pid=\d+", "<pid> ", text)


@pytest.mark.parametrize("channel", sorted(PLANTS))
async def test_a_trusted_sandbox_is_recycled_only_when_every_channel_is_unchanged(bash_image, channel):
    async with SandboxPool(bash_image, size=1, cmd=SLEEPER) as pool:
        sb = await pool.acquire(trusted=True)
        await sb.exec("cat /etc/hostname; ls /dev/shm")  # reads only: still pristine
        await pool.release(sb)
        await pool.drain()
        assert pool.stats["reused"] == 1, pool.stats
        sb = await pool.acquire(trusted=True)
        if channel.startswith("launcher-"):
            await (await sb.shell()).run(PLANTS[channel])
        else:
            await sb.exec(PLANTS[channel])
        await pool.release(sb)
        await pool.drain()
        assert pool.stats["replaced"] == 1 and pool.stats["reused"] == 1, (channel, pool.stats)


async def test_a_planted_sandbox_never_feeds_a_gold(tmp_path, monkeypatch):
    """bash/fs1/6's gold lists every .txt file from /: planted ones must never show in its facts."""
    monkeypatch.setenv("INTERCODE_AGENTS_CACHE", str(tmp_path))
    from intercode_agents.envs.bash import fact_store as bash_fact_store

    monkeypatch.setattr(bash_fact_store, "_stores", {})
    async with make_env("bash", facts_cache="disk") as env:
        await env.reset(task_id="bash/fs1/6")
        agent = env.sandbox
        await env.gym.step("echo planted > /tmp/planted.txt; echo planted > /dev/shm/planted.txt")
        await env.gym.step("find /testbed / -iname '*.txt' -exec du -s {} + | sed 's/^/$(hostname): /'")
        _, reward, *_ = await env.gym.step("submit")
        facts = env.facts.facts(agent.image_id, env.task.gold)
        assert facts is not None and "planted" not in (facts.output or "")
        assert reward < 1.0  # the agent's own output lists its planted files: it is not the gold's
        stored = "".join(p.read_text() for p in tmp_path.rglob("gold-*.json"))
        assert stored and "planted" not in stored
        with pytest.raises(IntercodeError, match="untrusted"):
            await gold_facts(agent, env.task.gold, 10)  # the agent's sandbox can never feed a gold
    await asyncio.sleep(0)
    assert containers_of_run(RUN_ID) == []

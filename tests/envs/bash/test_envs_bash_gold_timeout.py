"""Issue 13, finding 8: a gold that never finishes runs once; after that its task is corrupt at once."""

from __future__ import annotations

import time

from intercode_agents import make_env
from intercode_agents.envs.bash import fact_store as bash_fact_store


async def test_a_gold_that_times_out_is_not_run_again(tmp_path, monkeypatch):
    monkeypatch.setenv("INTERCODE_AGENTS_CACHE", str(tmp_path))
    monkeypatch.setattr(bash_fact_store, "_stores", {})
    async with make_env("bash", gold_timeout=3, facts_cache="disk") as env:
        await env.reset(task_id="bash/fs1/55")  # its gold greps every file from /: it never ends
        await env.gym.step("echo wrong")
        started = time.perf_counter()
        first = await env.evaluate()
        assert time.perf_counter() - started < 30  # one gold run, bounded by its timeout
        assert first.corrupt and first.parts["gold_failed"]
        for _ in range(3):  # Try Again scores every turn: none runs the gold again
            started = time.perf_counter()
            again = await env.evaluate()
            assert again.corrupt and time.perf_counter() - started < 2
    monkeypatch.setattr(bash_fact_store, "_stores", {})  # a later process: from the disk store
    async with make_env("bash", gold_timeout=3, facts_cache="disk") as env:
        await env.reset(task_id="bash/fs1/55")
        started = time.perf_counter()
        _, reward, _, _, info = await env.gym.step("submit")
        assert info["corrupt"] and reward == 0.0 and time.perf_counter() - started < 2

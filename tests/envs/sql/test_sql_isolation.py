"""SQL episodes cannot observe or affect each other or the gold (issue 11, findings 6-11).

Every attack here runs through the public API, as an agent's actions would, while the servers are
watched from the outside (tests/sql_server_view.py) to prove the attacked statement really ran at
the time. Each finding's test failed on the shared-account server this replaced.
"""

from __future__ import annotations

import asyncio
import re
import secrets
from typing import Any

from intercode_agents.datasets import Task, get_task
from intercode_agents.envs import Env, make_env
from tests.sql_server_view import Killer, lock_holder, threads_running, wait_running

# A second or two on an idle 2-core machine: long enough to be watched and attacked.
SLOW = "SELECT count(*) FROM world_1.city a, world_1.countrylanguage b WHERE a.Population > b.Percentage"
SLOW_COUNT = "[(4013552,)]"
ENDLESS = "SELECT count(*) FROM world_1.city a, world_1.city b, world_1.city c"


def marked(sql: str) -> tuple[str, str]:
    marker = f"mark{secrets.token_hex(6)}"
    return f"{sql} /* {marker} */", marker


def slow_gold_task() -> tuple[Task, str]:
    """A task of the poker_player database whose gold is slow and holds a marker."""
    gold, marker = marked(SLOW)
    task = get_task("sql/spider/0").model_copy(update={"id": f"sql/spider/{marker}", "gold": gold})
    return task, marker


async def test_process_list_shows_no_other_episode_and_no_gold() -> None:
    """Finding 6: polling information_schema.PROCESSLIST showed concurrent episodes and the gold."""
    statement, marker = marked(SLOW)
    task, gold_marker = slow_gold_task()
    async with make_env("sql", action_timeout=60) as a, make_env("sql") as b, make_env("sql") as c:
        await a.reset(task_id="sql/spider/0")
        await b.reset(task_id="sql/spider/0")
        phases = ((marker, a.gym.step(statement)), (gold_marker, play(c, task, "SELECT 1")))
        for target, phase in phases:
            running = asyncio.create_task(phase)
            await wait_running(target)
            for poll in ("SELECT ID, USER, INFO FROM information_schema.PROCESSLIST", "SHOW PROCESSLIST"):
                obs, *_ = await b.gym.step(poll)
                assert target not in obs, obs
            await running


async def play(env: Env, task: Task, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
    """An episode of ``task``: ``action``, then submit (its gold runs from the reset on)."""
    await env.reset(task=task)
    await env.gym.step(action)
    return await env.gym.step("submit")


async def test_kill_reaches_no_other_episode_and_no_gold() -> None:
    """Finding 7: KILL QUERY of another episode's statement or of the gold worked, and a killed gold
    scored an empty answer 1.0 in intercode mode."""
    statement, marker = marked(SLOW)
    task, gold_marker = slow_gold_task()
    async with (
        make_env("sql", action_timeout=60) as victim,
        make_env("sql", action_timeout=60, reward="intercode") as scored,
        make_env("sql") as killer,
    ):
        await victim.reset(task_id="sql/spider/0")
        await killer.reset(task_id="sql/spider/0")
        empty = "SELECT Name FROM people WHERE 0"  # an empty answer
        for target, phase in ((marker, victim.gym.step(statement)), (gold_marker, play(scored, task, empty))):
            running = asyncio.create_task(phase)
            for _, thread_id in await wait_running(target):  # ids an attacker could guess
                for kill in (f"KILL QUERY {thread_id}", f"KILL {thread_id}", f"KILL CONNECTION {thread_id}"):
                    obs, _, _, _, info = await killer.gym.step(kill)
                    assert info["errored"], obs
            obs, reward, _, _, info = await running
            if target == marker:
                assert (obs, info["errored"]) == (SLOW_COUNT, False)
            else:
                assert (reward, info["corrupt"]) == (0.0, False), info


async def test_a_gold_killed_on_its_server_is_corrupt_and_never_cached() -> None:
    """A gold that cannot run is corrupt in both modes, never a free reward, and the failure is not
    kept: the next episode runs the gold again."""
    for mode in ("intercode", "strict"):
        task, marker = slow_gold_task()
        async with make_env("sql", action_timeout=60, reward=mode) as env:
            killer = await asyncio.to_thread(Killer, marker)  # every run of the gold, a retry included
            try:
                _, reward, _, _, info = await play(env, task, "SELECT Name FROM people WHERE 0")
            finally:
                await asyncio.to_thread(killer.close)
            assert (reward, info["corrupt"]) == (0.0, True), (mode, info)
            _, reward, _, _, info = await play(env, task, SLOW)
            assert (reward, info["corrupt"]) == (1.0, False), (mode, info)


async def test_user_level_locks_are_no_channel_between_episodes() -> None:
    """Finding 8: GET_LOCK('x', 0) held by one episode blocked another, which saw the holder's id."""
    name = f"lock{secrets.token_hex(4)}"
    async with make_env("sql") as a, make_env("sql") as b:
        await a.reset(task_id="sql/spider/0")
        await b.reset(task_id="sql/spider/0")
        for action in (f"SELECT GET_LOCK('{name}', 0)", f"SELECT /*! GET_LOCK('{name}', 0) */ 1"):
            obs, _, _, _, info = await a.gym.step(action)
            assert info["errored"] and "refused" in obs, obs
            assert await asyncio.to_thread(lock_holder, name) == "NULL"
        for action in (f"SELECT IS_USED_LOCK('{name}')", f"SELECT IS_FREE_LOCK('{name}')"):
            obs, _, _, _, info = await b.gym.step(action)
            assert info["errored"] and "refused" in obs, obs


async def test_a_statement_past_its_deadline_is_dead_before_the_step_returns() -> None:
    """Finding 9: a statement whose client gave up, with the timeout lifted through a session
    variable or a statement hint, kept running on the server into later episodes."""
    async with make_env("sql", action_timeout=2) as env:
        await env.reset(task_id="sql/spider/0")
        lifted = ("SET SESSION max_statement_time = 0; {}", "SET STATEMENT max_statement_time = 0 FOR {}")
        for lift in (*lifted, "{}"):
            statement, marker = marked(ENDLESS)
            obs, _, _, _, info = await env.gym.step(lift.format(statement))
            assert info["errored"] and (info["timed_out"] or "refused" in obs), obs
            assert await asyncio.to_thread(threads_running, marker) == [], lift
            await env.reset(task_id="sql/spider/1")
            assert await asyncio.to_thread(threads_running, marker) == [], lift


async def test_a_restarted_helper_keeps_the_episodes_database() -> None:
    """Finding 10: after the helper restarted (an answer over 16 MiB), 'No database selected'."""
    async with make_env("sql") as env:
        await env.reset(task_id="sql/spider/0")
        obs, _, _, _, info = await env.gym.step("SELECT REPEAT('x', 1000000) FROM world_1.city LIMIT 20")
        assert info["errored"] and "restarted" in obs, obs[:300]
        obs, *_ = await env.gym.step("SELECT count(*) FROM poker_player")
        assert obs == "[(5,)]", obs
        obs, *_ = await env.gym.step("SELECT DATABASE()")
        assert obs == "[('poker_player',)]"


async def test_unencodable_text_is_an_invalid_action() -> None:
    """Finding 11 (the SQL path): a lone surrogate made step() raise."""
    async with make_env("sql") as env:
        await env.reset(task_id="sql/spider/0")
        for action in ("SELECT '\ud800'", "\udcff", "SELECT 1 -- \ud83d"):
            obs, _, _, _, info = await env.gym.step(action)
            assert info["action_type"] == "invalid" and re.search("not valid Unicode", obs), obs
        obs, *_ = await env.gym.step("SELECT count(*) FROM poker_player")
        assert obs == "[(5,)]"

"""The episode API of the four envs against real sandboxes, on the project's own mini tasks."""

from __future__ import annotations

import asyncio

import pytest

from intercode_agents import make_env
from intercode_agents.errors import ConfigError, UnknownTask

INFO_KEYS = {"turn", "action_type", "exit_code", "errored", "timed_out", "output_truncated", "duration_s"}


async def test_bash_episode_gym_semantics():
    async with make_env("bash", max_turns=3) as env:
        obs, info = await env.reset(task_id="bash/mini/0")
        assert obs.startswith("Count the lines") and info["task_id"] == "bash/mini/0"
        assert info["group"] == {"fs": "mini"}
        obs, reward, terminated, truncated, info = await env.gym.step("grep -c ERROR /testbed/logs/app.log")
        assert (obs, reward, terminated, truncated) == ("2\n", 0.0, False, False)
        assert INFO_KEYS <= info.keys() and info["exit_code"] == 0 and not info["errored"]
        obs, reward, terminated, truncated, info = await env.gym.step("ls /nope")
        assert info["errored"] and info["exit_code"] == 2 and not truncated
        obs, reward, terminated, truncated, info = await env.gym.step("grep -c ERROR /testbed/logs/app.log")
        assert truncated  # the third turn used the budget up
        obs, reward, terminated, truncated, info = await env.gym.step("submit")
        assert terminated and reward == 1.0 and info["action_type"] == "submit"
        assert info["reward_parts"]["answer"] == 0.33
        with pytest.raises(ConfigError, match="episode is over"):
            await env.gym.step("ls")


async def test_bash_commands_run_as_written_with_real_cd():
    async with make_env("bash") as env:
        await env.reset(task_id="bash/mini/3")
        await env.gym.step("cd /testbed/notes")
        obs, *_ = await env.gym.step("""printf '%s\\n' "$(pwd)" 'it'"'"'s' "a\\tb" """)
        assert obs == "/testbed/notes\nit's\na\\tb\n"


async def test_every_bash_episode_starts_pristine():
    async with make_env("bash") as env:
        await env.reset(task_id="bash/mini/7")
        await env.gym.step("rm -rf /testbed/logs && touch /root/marker && export LEFT=1")
        await env.reset(task_id="bash/mini/7")
        obs, *_ = await env.gym.step("ls /testbed/logs/archive | wc -l; ls /root/marker; echo ${LEFT:-unset}")
        assert obs.split("\n")[0] != "0"
        assert "No such file" in obs and "unset" in obs


async def test_concurrent_envs_never_share_state():
    async def episode(i: int) -> str:
        async with make_env("bash") as env:
            await env.reset(task_id="bash/mini/5")
            await env.gym.step(f"echo mine-{i} >> /testbed/notes/todo.txt")
            await asyncio.sleep(0.2)
            obs, *_ = await env.gym.step("tail -n 2 /testbed/notes/todo.txt")
            return obs

    outs = await asyncio.gather(*(episode(i) for i in range(4)))
    assert outs == [f"fix the bike light\nmine-{i}\n" for i in range(4)]


async def test_invalid_actions_are_steps_not_crashes():
    async with make_env("bash") as env:
        await env.reset(task_id="bash/mini/0")
        obs, _, terminated, _, info = await env.gym.step("echo a\x00b")
        assert info["action_type"] == "invalid" and info["errored"] and "NUL" in obs and not terminated
        obs, _, _, _, info = await env.gym.step("   ")
        assert info["action_type"] == "invalid" and "empty" in obs
        obs, *_ = await env.gym.step("echo fine")
        assert obs == "fine\n"


async def test_unknown_task_and_bad_config_are_clear():
    with pytest.raises(ConfigError, match="unknown env"):
        make_env("cobol")
    with pytest.raises(ConfigError, match="reward mode"):
        make_env("bash", reward="lenient")
    with pytest.raises(ConfigError, match="bad option"):
        make_env("bash", colour="blue")
    async with make_env("bash") as env:
        with pytest.raises(UnknownTask, match="bash/fs1/9999"):
            await env.reset(task_id="bash/fs1/9999")
        with pytest.raises(ConfigError, match="belongs to env 'sql'"):
            await env.reset(task_id="sql/mini/0")


async def test_tool_mode_is_a_live_sandbox_of_that_kind():
    async with make_env("bash") as env:
        obs, *_ = await env.gym.step("cd /tmp && pwd")
        assert obs == "/tmp\n"
    async with make_env("python") as env:
        await env.gym.step("x = 20")
        obs, *_ = await env.gym.step("x + 22")
        assert obs.strip() == "42"
    async with make_env("sql") as env:
        obs, *_ = await env.gym.step("SHOW DATABASES")
        assert "poker_player" in obs and "ic_mini" in obs


async def test_sql_is_read_only_with_clear_refusals_and_caps():
    async with make_env("sql", action_timeout=2, max_rows_shown=3) as env:
        await env.reset(task_id="sql/mini/0")
        obs, *_ = await env.gym.step("DESCRIBE book")
        assert "title" in obs
        for stmt in (
            "INSERT INTO book (title) VALUES ('x')",
            "UPDATE book SET pages = 1",
            "DELETE FROM loan",
            "DROP TABLE member",
            "CREATE TEMPORARY TABLE t (x INT)",
        ):
            obs, _, _, _, info = await env.gym.step(stmt)
            assert info["errored"] and "read-only" in obs, (stmt, obs)
        obs, *_ = await env.gym.step("SELECT book_id FROM book ORDER BY book_id")
        assert obs.startswith("[(1,), (2,), (3,)]") and "more rows not shown" in obs
        obs, _, _, _, info = await env.gym.step("SELECT SLEEP(10)")
        assert info["duration_s"] < 8
        obs, *_ = await env.gym.step("SELECT COUNT(*) FROM book")
        assert obs.startswith("[(")


async def test_sql_reset_selects_the_database_on_a_fresh_connection():
    async with make_env("sql") as env:
        await env.reset(task_id="sql/mini/1")
        await env.gym.step("SET @leftover = 7")
        obs, *_ = await env.gym.step("SELECT DATABASE()")
        assert obs == "[('ic_mini',)]"
        await env.reset(task_id="sql/spider/0")
        obs, *_ = await env.gym.step("SELECT DATABASE(), @leftover")
        assert obs == "[('poker_player', None)]"


async def test_python_repl_echoes_keeps_globals_and_survives_runaway_loops():
    async with make_env("python", action_timeout=2) as env:
        await env.reset(task_id="python/mini/2")
        obs, *_ = await env.gym.step("def double(x):\n    return 2 * x\n")
        assert obs == ""
        obs, *_ = await env.gym.step("double(21)")
        assert obs.strip() == "42"
        obs, _, _, _, info = await env.gym.step("while True:\n    pass")
        assert info["timed_out"] and "timed out" in obs
        obs, *_ = await env.gym.step("double(5)")
        assert obs.strip() == "10"
        obs, _, _, _, info = await env.gym.step("undefined_name")
        assert info["errored"] and "NameError" in obs
        await env.reset(task_id="python/mini/2")
        obs, _, _, _, info = await env.gym.step("double(1)")
        assert info["errored"] and "NameError" in obs  # reset gave fresh globals


async def test_ctf_copies_assets_but_never_the_solution():
    async with make_env("ctf") as env:
        await env.reset(task_id="ctf/mini/0")
        obs, *_ = await env.gym.step("pwd; find . | sort")
        assert obs.startswith("/ctf\n") and "message.txt" in obs and "solution" not in obs
        obs, reward, terminated, *_ = await env.gym.step("submit picoCTF{wrong_flag}")
        assert terminated and reward == 0.0
        await env.reset(task_id="ctf/mini/0")
        obs, reward, *_ = await env.gym.step("submit   picoCTF{b4se64_is_n0t_crypt0}  ")
        assert reward == 1.0


async def test_ctf_unavailable_task_says_why():
    async with make_env("ctf") as env:
        with pytest.raises(UnknownTask, match="cannot run here"):
            await env.reset(task_id="ctf/65")

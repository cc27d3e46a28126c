"""Sessions and one-off commands started by the in-container launcher instead of a docker exec each."""

from __future__ import annotations

import time

import pytest

from intercode_agents.errors import SessionDied
from intercode_agents.sandbox import Sandbox, SandboxPool
from intercode_agents.sandbox.conformance.fixtures import SLEEPER
from intercode_agents.sandbox.launcher import LaunchedProcess, spawn_line

# What a session could notice about how it was started (PPID aside, which must differ; SigQ
# counts the signals queued for root on the whole host, so it is left out).
SURROUNDINGS = (
    "env | sort; ulimit -a; umask; pwd; trap -p; echo SHLVL=$SHLVL; shopt | md5sum; set -o | md5sum; "
    "cat /proc/self/status | grep -E '^(Sig(Pnd|Blk|Ign|Cgt)|ShdPnd|Cap|NoNewPrivs|Seccomp)'"
)


async def test_a_launched_session_sees_what_a_docker_exec_session_sees(bash_image, backend):
    seen = {}
    for launcher in (True, False):
        async with Sandbox(bash_image, backend=backend, cmd=SLEEPER, launcher=launcher) as sb:
            shell = await sb.shell()
            assert isinstance(shell._proc, LaunchedProcess) == launcher
            seen[launcher] = (await shell.run(SURROUNDINGS)).output
    assert seen[True] == seen[False]
    assert "SHLVL=1" in seen[True]


async def test_sessions_start_fast_and_fall_back_to_exec_while_the_launcher_is_lent(bash_image, backend):
    async with Sandbox(bash_image, backend=backend, cmd=SLEEPER) as sb:
        started = time.perf_counter()
        first = await sb.shell()
        launched_s = time.perf_counter() - started
        second = await sb.shell()  # the launcher's stream is lent to the first: a docker exec
        assert isinstance(first._proc, LaunchedProcess) and not isinstance(second._proc, LaunchedProcess)
        assert launched_s < 1.0
        await first.run("cd /tmp && X=1")
        assert (await first.run("pwd; echo $X")).output == "/tmp\n1\n"
        assert (await second.run("pwd; echo ${X:-unset}")).output == "/\nunset\n"
        await sb.forget(first)
        again = await sb.shell()  # the launcher is free again, and the new session is fresh
        assert isinstance(again._proc, LaunchedProcess)
        assert (await again.run("pwd; echo ${X:-unset}")).output == "/\nunset\n"


async def test_exit_in_a_launched_session_gives_a_new_session(bash_image, backend):
    async with Sandbox(bash_image, backend=backend, cmd=SLEEPER) as sb:
        shell = await sb.shell()
        await shell.run("export GONE=1")
        r = await shell.run("exit 3")
        assert r.restarted
        assert (await shell.run("echo ${GONE:-fresh}")).output == "fresh\n"
        assert isinstance(shell._proc, LaunchedProcess) and not sb.degraded


async def test_bytes_pushed_into_the_stream_are_never_run_by_the_launcher(bash_image, backend):
    async with Sandbox(bash_image, backend=backend, cmd=SLEEPER) as sb:
        shell = await sb.shell()
        # The session's stdin is the launcher's stream: after `exit`, the launcher reads the rest.
        await shell.run(r"printf 'exit\0touch /pwned\0' > /proc/$$/fd/0")
        await sb.forget(shell)
        fresh = await sb.shell()
        assert isinstance(fresh._proc, LaunchedProcess)
        assert (await fresh.run("ls /pwned 2>&1; echo done")).output.endswith(
            "No such file or directory\ndone\n"
        )


async def test_an_agent_killing_the_launcher_gets_a_session_and_the_pool_a_new_sandbox(bash_image, backend):
    async with SandboxPool(bash_image, backend=backend, size=1, cmd=SLEEPER) as pool:
        sb = await pool.acquire()
        shell = await sb.shell()
        r = await shell.run("kill -9 $PPID; sleep 0.2; echo survived")
        assert "survived" in r.output or r.restarted
        assert (await shell.run("echo still works")).output == "still works\n"
        await sb.close_sessions()
        assert sb.degraded  # the session's end closed the stream: the launcher is known gone
        await pool.release(sb)
        await pool.drain()
        assert pool.stats["replaced"] == 1
        async with pool.sandbox() as other:
            assert not other.degraded


async def test_one_off_commands_through_the_launcher_keep_exec_semantics(bash_image, backend):
    async with Sandbox(bash_image, backend=backend, cmd=SLEEPER) as sb:
        r = await sb.exec("cat; echo out; echo err >&2; exit 4", timeout=10)  # stdin is closed
        assert (r.exit_code, r.output) == (4, "out\nerr\n")
        r = await sb.exec(["sh", "-c", 'echo "$0 $PWD $X"', "argv0"], workdir="/etc", env={"X": "y"})
        assert r.output == "argv0 /etc y\n"
        r = await sb.exec("echo begin; sleep 100", timeout=1)
        assert r.timed_out and r.output.startswith("begin")
        assert (await sb.exec("echo after")).output == "after\n"  # the launcher came back
        assert not sb.degraded


def test_spawn_lines_quote_every_word():
    line = spawn_line(["echo", "a b", "$HOME", "it's"], "/tmp/x y", {"K": "v w"}, one_off=True)
    assert "'a b'" in line and "'$HOME'" in line and "'K=v w'" in line and "'/tmp/x y'" in line
    assert line.endswith("</dev/null 2>&1 )")


async def test_the_launcher_is_the_main_process_of_an_image_that_only_idles(bash_image, backend):
    async with Sandbox(bash_image, backend=backend) as sb:  # the image's command is `sleep infinity`
        assert len(await sb.processes()) == 2  # the init and the launcher: no sleep, no exec
        shell = await sb.shell()
        assert isinstance(shell._proc, LaunchedProcess)
        out = (await shell.run("tr '\\0' ' ' < /proc/1/cmdline; echo; ps -o args= -p $PPID")).output
        assert "sleep" not in out and out.count("bash --noprofile --norc -s") == 2


async def test_killing_a_main_launcher_stops_the_sandbox_with_a_clear_error(bash_image, backend):
    async with SandboxPool(bash_image, backend=backend, size=1) as pool:
        sb = await pool.acquire()
        shell = await sb.shell()
        with pytest.raises(SessionDied, match="stopped"):
            await shell.run("kill -9 $PPID; sleep 5", timeout=10)
        await pool.release(sb)
        await pool.drain()
        assert pool.stats["replaced"] == 1


@pytest.mark.parametrize("diff_source", ["auto", "engine"])
async def test_killing_every_process_always_ends_that_command_with_the_sandbox_lost(
    bash_image, backend, diff_source
):
    """``kill -9 -1`` spares the calling shell and only queues the launcher's death; the container
    stops a moment later. Whatever that moment, the command itself ends in SessionDied (the host's
    reading of the main process on the fast paths, the shell's own elsewhere), never in a next
    command that still ran (see :mod:`intercode_agents.sandbox.main_process`)."""
    for _ in range(4):
        async with Sandbox(bash_image, backend=backend, diff_source=diff_source) as sb:
            assert sb.main_pid is not None
            shell = await sb.shell()
            assert (await shell.run("echo before")).output == "before\n"
            with pytest.raises(SessionDied, match="container has stopped"):  # (or the stream ended first)
                await shell.run("kill -9 -1; echo after", timeout=10)
            assert not await backend.running(sb.id)


async def test_a_sandbox_whose_launcher_cannot_start_uses_exec_and_is_still_reused(
    bash_image, backend, monkeypatch
):
    from intercode_agents.sandbox.launcher import Launcher

    async def no_bash(self, *args, **kwargs):
        raise SessionDied("no bash in this image")

    monkeypatch.setattr(Launcher, "start", no_bash)
    async with SandboxPool(bash_image, backend=backend, size=1, cmd=SLEEPER) as pool:
        sb = await pool.acquire(trusted=True)
        shell = await sb.shell()
        assert not isinstance(shell._proc, LaunchedProcess) and not sb.degraded
        assert (await shell.run("echo via exec")).output == "via exec\n"
        await pool.release(sb)
        await pool.drain()
        assert pool.stats["reused"] == 1

"""The persistent bash session: state, exit codes, timeouts, output caps and odd bytes."""

from __future__ import annotations

import time

import pytest
import pytest_asyncio

from intercode_agents.errors import InvalidAction
from intercode_agents.sandbox import Sandbox


@pytest_asyncio.fixture(loop_scope="session")
async def shell_sb(bash_image, backend):
    async with Sandbox(bash_image, backend=backend, cmd=["sleep", "infinity"]) as sb:
        yield sb, await sb.shell()


async def test_state_persists_across_commands(shell_sb):
    _, sh = shell_sb
    assert (await sh.run("cd /tmp && export X=1", timeout=10)).exit_code == 0
    r = await sh.run("pwd; echo $X", timeout=10)
    assert r.output == "/tmp\n1\n"
    await sh.run("greet() { echo \"hello $1\"; }; Y='a b'")
    r = await sh.run('greet world; echo "$Y"')
    assert r.output == "hello world\na b\n"


async def test_exit_code_and_stderr_are_returned_in_order(shell_sb):
    _, sh = shell_sb
    r = await sh.run("echo out; echo err >&2; ls /no/such/dir; exit_code_probe=1; false")
    assert r.exit_code == 1
    assert r.output.startswith("out\nerr\n")
    assert "No such file or directory" in r.output
    assert (await sh.run("(exit 42)")).exit_code == 42


async def test_commands_run_exactly_as_written(shell_sb):
    _, sh = shell_sb
    r = await sh.run("""printf '%s|' "it's" 'a "quoted"' \\$HOME; echo""")
    assert r.output == """it's|a "quoted"|$HOME|\n"""
    r = await sh.run("cat <<'EOF'\nline with $dollar\n\tand tab\nEOF")
    assert r.output == "line with $dollar\n\tand tab\n"


async def test_stdin_is_closed_for_commands(shell_sb):
    _, sh = shell_sb
    r = await sh.run("cat; echo done", timeout=5)
    assert r.output == "done\n" and not r.timed_out


async def test_sleep_times_out_with_partial_output_and_session_survives(shell_sb):
    _, sh = shell_sb
    await sh.run("cd /var")
    started = time.monotonic()
    r = await sh.run("echo partial; sleep 1000", timeout=2)
    elapsed = time.monotonic() - started
    assert r.timed_out and not r.restarted
    assert r.output == "partial\n"
    assert elapsed < 6
    after = await sh.run("pwd", timeout=5)
    assert after.output == "/var\n" and after.exit_code == 0


async def test_busy_builtin_loop_restarts_the_session_and_says_so(shell_sb):
    _, sh = shell_sb
    r = await sh.run("while :; do :; done", timeout=1)
    assert r.timed_out and r.restarted
    assert "restarted" in r.output
    assert (await sh.run("echo alive")).output == "alive\n"


async def test_exit_restarts_the_session(shell_sb):
    _, sh = shell_sb
    r = await sh.run("exit 3")
    assert r.restarted
    assert (await sh.run("echo back")).output == "back\n"


async def test_huge_output_is_capped_and_memory_stays_flat(shell_sb):
    _, sh = shell_sb

    def rss() -> int:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * 4096

    before = rss()
    r = await sh.run("head -c 1000000000 /dev/zero | tr '\\0' a", timeout=120)
    grown = rss() - before
    assert r.truncated
    assert len(r.output) < 1_200_000
    assert "bytes of output omitted" in r.output
    assert grown < 32 << 20, f"harness grew by {grown} bytes"
    assert (await sh.run("echo ok")).output == "ok\n"


async def test_binary_and_nul_output_come_back_readable(shell_sb):
    _, sh = shell_sb
    r = await sh.run("printf 'a\\000b\\377c\\n'")
    assert r.output == "a\x00b\ufffdc\n"
    r = await sh.run("head -c 3000 /dev/urandom")
    assert isinstance(r.output, str) and r.output_bytes == 3000


async def test_nul_byte_in_command_is_refused(shell_sb):
    _, sh = shell_sb
    with pytest.raises(InvalidAction, match="NUL"):
        await sh.run("echo a\x00b")
    assert (await sh.run("echo fine")).output == "fine\n"

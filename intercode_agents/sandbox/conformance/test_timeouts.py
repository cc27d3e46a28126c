"""Issue findings 4 and 5: a timeout ends everything its command started, and processes left
writing into a sandbox's streams never break it."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from intercode_agents.errors import SessionDied
from intercode_agents.sandbox import Sandbox
from intercode_agents.sandbox.conformance.fixtures import SLEEPER

BUSY = "while :; do :; done"
ESCAPES = {
    "setsid in a subshell": f"(setsid sh -c '{BUSY}' &); sleep 100",
    "setsid -f": f"setsid -f sh -c '{BUSY}'; sleep 100",
    "nohup and disown": f"nohup sh -c '{BUSY}' >/dev/null 2>&1 & disown; sleep 100",
    "double fork": f"( ( sh -c '{BUSY}' & ) & ); sleep 100",
    "a daemon that ignores SIGINT": f"(trap '' INT; setsid sh -c 'trap \"\" INT; {BUSY}' &); sleep 100",
}
FORKER = "sh -c 'while :; do (sleep 4242 &); sleep 0.005; done'"  # children, each left to the init
LIST = "pgrep -fc 'whil[e] :' || true"  # (the pattern never matches its own command line)


@pytest.mark.parametrize("escape", sorted(ESCAPES))
@pytest.mark.parametrize("where", ["from the host", "from inside"])
async def test_a_timeout_ends_everything_the_command_started(bash_image, backend, escape, where):
    async with Sandbox(bash_image, backend=backend) as sb:
        # "from inside": as on a remote engine, the kill runs as a script in the sandbox.
        with sb.slow_paths() if where == "from inside" else contextlib.nullcontext():
            shell = await sb.shell()
            await shell.run("nohup sleep 500 >/dev/null 2>&1 & disown")  # an earlier daemon: it stays
            r = await shell.run(ESCAPES[escape], timeout=2)
            assert r.timed_out
            assert (await shell.run(LIST)).output.strip() == "0"
            assert "sleep 500" in (await shell.run("ps -eo args=")).output
            assert (await shell.run("echo still here")).output == "still here\n"


@pytest.mark.parametrize("where", ["from the host", "from inside"])
async def test_stopping_everything_leaves_no_child_of_a_process_forking_without_pause(
    bash_image, backend, where
):
    """A child forked between the listing of the processes and their signal is not on that list (the
    disk cap's stop met it): the kill lists them again until none is left."""
    async with Sandbox(bash_image, backend=backend) as sb:
        with sb.slow_paths() if where == "from inside" else contextlib.nullcontext():
            for _ in range(5):
                shell = await sb.shell()
                forker = asyncio.create_task(shell.run(FORKER, timeout=30))
                await asyncio.sleep(0.3)
                await sb.stop_everything()
                with contextlib.suppress(SessionDied):
                    await forker
                left = await sb.exec("pgrep -c 'slee[p] 4242' || true")
                assert left.output.strip() == "0"


async def test_a_one_off_command_past_its_deadline_leaves_nothing_running(bash_image, backend):
    async with Sandbox(bash_image, backend=backend, cmd=SLEEPER) as sb:
        r = await sb.exec(ESCAPES["setsid in a subshell"], timeout=2)
        assert r.timed_out
        assert (await sb.exec(LIST)).output.strip() == "0"


async def test_background_writers_never_break_the_sandbox(bash_image, backend):
    writer = "bash -c 'while :; do echo x; sleep 0.05; done &'"
    async with Sandbox(bash_image, backend=backend) as sb:
        r = await sb.exec(writer)  # holds the launcher's stream after the command returned
        assert r.exit_code == 0
        for _ in range(5):
            r = await sb.exec("echo hi")
            assert r.exit_code == 0 and "hi\n" in r.output
        shell = await sb.shell()
        await shell.run(writer)
        await sb.forget(shell)  # the session ends; its writer still writes into the launcher's stream
        shell = await sb.shell()
        r = await shell.run("echo fresh session")
        assert r.exit_code == 0 and "fresh session" in r.output
        assert (await sb.exec("echo once more")).exit_code == 0


async def test_junk_on_a_helpers_protocol_stream_never_breaks_a_request(bash_image, backend):
    """What code run by a helper writes to the helper's own output is skipped, never an error."""
    helper = r"""
echo '{"ready": true}'
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed 's/.*"id": \([0-9]*\).*/\1/')
  printf '[1]\n{"ok": true, "id": 999}\nnot json\n'; printf '%0.s[' $(seq 3000); echo
  printf '{"ok": true, "id": %s}\n' "$id"
done
"""
    async with Sandbox(bash_image, backend=backend, cmd=SLEEPER) as sb:
        js = await sb.json_session(["bash", "-c", helper], grace=0.5)
        for _ in range(2):
            reply = await js.request({"op": "ping"}, timeout=5)
            assert reply["ok"] is True and not reply.get("restarted")
        liar = await sb.json_session(
            ["bash", "-c", "echo '{\"ready\": true}'; while :; do echo '{\"id\": 0}'; done"]
        )
        reply = await liar.request({"op": "ping"}, timeout=1)  # endless foreign lines: the deadline holds
        assert reply["timed_out"] and reply["restarted"]

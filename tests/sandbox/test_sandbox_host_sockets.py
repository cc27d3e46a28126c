"""Helpers answering on a unix socket reached from the engine's host (sandbox/host_sockets.py)."""

from __future__ import annotations

import os
import shlex

import pytest

from intercode_agents.images import image_ref
from intercode_agents.sandbox import Sandbox, host_sockets
from intercode_agents.sandbox.contract import HostUnreadable
from tests.docker_helpers import SLEEPER

# A helper of the shared JSON-lines protocol (the SQL image carries it) that says who it is.
HELPER = [
    "python3",
    "-c",
    "import os, sys; sys.path.insert(0, '/opt/intercode'); from jsonl_protocol import Channel, serve\n"
    "channel = Channel(); channel.send({'ready': True})\n"
    "def spew(r):\n    print('x' * 1_000_000, flush=True)\n    return {'ok': True}\n"
    "serve(channel, {'who': lambda r: {'ok': True, 'pid': os.getpid(), 'x': r.get('x')}, 'spew': spew})",
]
LISTEN = (
    "import socket, time; s = socket.socket(socket.AF_UNIX); s.bind({path!r}); s.listen(); time.sleep(99)"
)
ENGINE_SOCKET = "/var/run/docker.sock"


@pytest.fixture
async def sandbox():
    sb = Sandbox(image_ref("sql"), cmd=SLEEPER)
    await sb.start()
    if sb.host_access is None:
        await sb.close()
        pytest.skip("no fast paths here: every helper keeps its stream")
    try:
        yield sb
    finally:
        await sb.close()


async def test_a_helper_answers_on_its_socket_and_leaves_no_path_behind(sandbox):
    session = await sandbox.json_session(HELPER, host_socket=True)
    assert session.transport == "socket"
    path = session.ready_info["socket"]
    reply = await session.request({"op": "who", "x": "y" * 100_000})
    assert reply["ok"] and reply["pid"] == session.pid and reply["x"] == "y" * 100_000
    assert (await sandbox.exec(f"test -e {shlex.quote(path)} || echo gone")).output == "gone\n"
    await session.close()
    assert session.pid not in {p.pid for p in sandbox.host_access.processes()}


async def test_what_a_socket_helper_prints_elsewhere_never_blocks_it(sandbox):
    """Its stray output still goes to its stream, which the harness keeps reading (and dropping)."""
    session = await sandbox.json_session(HELPER, host_socket=True)
    assert session.transport == "socket"
    for _ in range(8):  # 8 MB, far past what the engine's stream buffers
        assert (await session.request({"op": "spew"}, timeout=10))["ok"]
    assert (await session.request({"op": "who"}))["pid"] == session.pid
    await session.close()


async def test_without_fast_paths_the_stream_carries_the_requests(sandbox):
    with sandbox.slow_paths():
        session = await sandbox.json_session(HELPER, host_socket=True)
    assert session.transport == "stream" and "socket" not in session.ready_info
    assert (await session.request({"op": "who"}))["pid"] == session.pid
    await session.close()


async def test_a_helper_whose_socket_is_not_reached_keeps_its_stream(sandbox):
    """The helper listens, but the harness's first request comes on the stream: it stays there."""
    path = "/tmp/unreached.sock"
    session = await sandbox.json_session(HELPER, env={"INTERCODE_HELPER_SOCKET": path})
    assert session.transport == "stream" and session.ready_info["socket"] == path
    assert (await session.request({"op": "who"}))["pid"] == session.pid
    assert (await sandbox.exec(f"test -e {path} || echo gone")).output == "gone\n"
    await session.close()


async def test_a_listener_other_than_the_helper_is_refused(sandbox):
    """Another process of the sandbox listening where the helper would: the harness sends it nothing."""
    listener = await sandbox.start_process(["python3", "-c", LISTEN.format(path="/tmp/a.sock")], goodbye=b"")
    helper = await sandbox.json_session(HELPER)
    for _ in range(100):
        if (await sandbox.exec("test -S /tmp/a.sock && echo up")).output == "up\n":
            break
    with pytest.raises(HostUnreadable, match="is not the socket of process"):
        host_sockets.connect(sandbox.host_access.processes(), helper.pid, "/tmp/a.sock")
    sock = host_sockets.connect(sandbox.host_access.processes(), listener.pid, "/tmp/a.sock")  # its own
    sock.close()
    await helper.close()
    await sandbox.end_process(listener, busy=True)


@pytest.mark.skipif(not os.path.exists(ENGINE_SOCKET), reason="the engine's socket is elsewhere on this host")
async def test_a_link_to_a_host_socket_is_never_spoken_to(sandbox):
    """An absolute link in the sandbox resolves on this host when reached through /proc/<pid>/root:
    the engine's own socket answers, and is refused because the helper is not what listens there."""
    session = await sandbox.json_session(HELPER)
    await sandbox.exec(f"ln -s {ENGINE_SOCKET} /tmp/evil.sock")
    with pytest.raises(HostUnreadable, match="is not the socket of process"):
        host_sockets.connect(sandbox.host_access.processes(), session.pid, "/tmp/evil.sock")
    await session.close()

"""The warm pool (verified-pristine reuse) and the JSON-lines transport."""

from __future__ import annotations

import asyncio

from intercode_agents.sandbox import RUN_ID, Sandbox, SandboxPool
from intercode_agents.sandbox.conformance.fixtures import SLEEPER, containers_of_run

# A JSON-lines helper written in sh: echoes requests (and their id, as the protocol asks), hangs on
# demand.
ECHO_HELPER = r"""
echo '{"ready": true}'
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed 's/.*"id": \([0-9]*\).*/\1/')
  case "$line" in
    *hang*) sleep 100 ;;
    *) printf '{"ok": true, "id": %s, "echo": %s}\n' "$id" "$line" ;;
  esac
done
"""


async def test_untrusted_leases_are_never_handed_out_again(bash_image, backend):
    async with SandboxPool(bash_image, backend=backend, size=2, cmd=SLEEPER) as pool:
        seen = set()
        for _ in range(3):
            sb = await pool.acquire()
            assert sb.id not in seen
            seen.add(sb.id)
            await (await sb.shell()).run("ls /tmp")  # only reads: still never reused
            await pool.release(sb)
            await pool.drain()
        assert pool.stats["reused"] == 0 and pool.stats["replaced"] == 3, pool.stats
    await asyncio.sleep(0)
    assert containers_of_run(RUN_ID, backend) == []


async def test_trusted_leases_reuse_only_verified_pristine_sandboxes(bash_image, backend):
    async with SandboxPool(bash_image, backend=backend, size=2, cmd=SLEEPER) as pool:
        sb = await pool.acquire(trusted=True)
        await (await sb.shell()).run("echo changed > /tmp/dirty")
        await pool.release(sb)
        await pool.drain()
        assert pool.stats["replaced"] == 1

        sb2 = await pool.acquire(trusted=True)
        assert await sb2.diff() == []  # whatever we got is pristine
        await (await sb2.shell()).run("ls /tmp")
        await pool.release(sb2)
        await pool.drain()
        assert pool.stats["reused"] == 1, pool.stats

        sb3 = await pool.acquire(trusted=True)
        assert sb3 is sb2  # the recycled one goes to trusted leases
        await sb3.exec("nohup sleep 300 >/dev/null 2>&1 &")  # a leftover process is state too
        await pool.release(sb3)
        await pool.drain()
        assert pool.stats["replaced"] == 2

        sb4 = await pool.acquire(trusted=True)
        await pool.release(sb4)
        await pool.drain()
        agent = await pool.acquire()
        assert agent is not sb4  # a recycled sandbox never goes to untrusted code
        await pool.release(agent)
    await asyncio.sleep(0)
    assert containers_of_run(RUN_ID, backend) == []


async def test_json_session_round_trip_and_restart_after_hang(bash_image, backend):
    async with Sandbox(bash_image, backend=backend, cmd=SLEEPER) as sb:
        js = await sb.json_session(["sh", "-c", ECHO_HELPER], grace=0.5)
        assert js.ready_info == {"ready": True}
        reply = await js.request({"op": "ping", "text": 'é"\\'}, timeout=5)
        assert reply["ok"] and reply["echo"]["text"] == 'é"\\' and reply["echo"]["op"] == "ping"
        reply = await js.request({"op": "hang"}, timeout=0.5)
        assert reply["ok"] is False and reply["restarted"] and reply["timed_out"]
        reply = await js.request({"op": "again"}, timeout=5)
        assert reply["ok"] and reply["echo"]["op"] == "again"


async def test_a_pool_keeps_size_sandboxes_ready_or_in_use_and_removes_the_surplus(bash_image, backend):
    async with SandboxPool(bash_image, backend=backend, size=1, cmd=SLEEPER) as pool:
        pool.grow(2)
        await pool.drain()
        assert pool.ready == 3
        taken = [await pool.acquire(trusted=True) for _ in range(4)]  # one more than it holds
        await pool.drain()
        assert pool.stats["cold_acquires"] == 1 and not pool.ready  # in use counts: no refill
        pool.shrink(2)
        for sb in taken:
            await pool.release(sb)
        await pool.drain()
        assert pool.size == 1 and pool.ready == 1
        assert pool.stats["reused"] == 1 and pool.stats["surplus"] == 3
        assert sum(sb.running for sb in taken) == 1

"""The pristine fingerprint read from the host sees every channel the in-sandbox script sees.

A pool recycles a trusted sandbox only when its fingerprint equals the one it had fresh. Where the
backend has fast paths the runtime channels are read from the host (:mod:`..host_runtime`), else by
``RUNTIME_SCRIPT`` inside the sandbox: here every channel is written once, and both ways of taking
the fingerprint must see the sandbox change.
"""

from __future__ import annotations

import pytest

from intercode_agents.sandbox import Sandbox
from intercode_agents.sandbox.conformance.fixtures import PLANTS, SLEEPER


@pytest.mark.parametrize("channel", sorted(PLANTS))
async def test_the_fingerprint_sees_each_channel_from_the_host_and_from_inside(bash_image, backend, channel):
    async with Sandbox(bash_image, backend=backend, cmd=SLEEPER) as sb:
        ways = ["host", "script"] if sb.host_access is not None else ["script"]

        async def fingerprints() -> dict[str, object]:
            taken: dict[str, object] = {}
            for way in ways:
                if way == "host":
                    taken[way] = await sb.forensics.fingerprint()
                else:
                    with sb.slow_paths():
                        taken[way] = await sb.forensics.fingerprint()
            return taken

        before = await fingerprints()
        assert before == await fingerprints()  # nothing changed: both ways agree with themselves
        shell = await sb.shell()
        await shell.run(PLANTS[channel])
        await sb.forget(shell)
        after = await fingerprints()
        for way in ways:
            assert after[way] != before[way], (channel, way)

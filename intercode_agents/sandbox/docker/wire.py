"""The only place where the Docker backend reaches past aiodocker's public API.

aiodocker has no call for ``GET /containers/{id}/changes`` or ``top`` with ``ps_args`` (and its JSON
helper drops an answer without a content type, as Podman sends them), opens a hijacked stream only on
its first read or write, and cannot half-close one. Those three needs are met here, on its private
attributes (``Docker._query``, ``Stream._init``, ``Stream._resp``), so that an
aiodocker upgrade that moves them breaks this module alone (the conformance suite notices at once).
"""

from __future__ import annotations

import json
from typing import Any

import aiodocker
import aiodocker.execs
import aiodocker.stream

from intercode_agents.errors import SessionDied
from intercode_agents.sandbox.contract import Channel
from intercode_agents.sandbox.docker.client import engine_call


async def query_json(client: aiodocker.Docker, path: str, params: dict[str, Any] | None = None) -> Any:
    """``GET`` an Engine API path that aiodocker has no method for (JSON whatever the content type
    says: Podman's compat service labels some answers text)."""
    async with client._query(path, params=params) as response:
        body = await response.read()
    return json.loads(body) if body.strip() else None


class DockerChannel(Channel):
    """A hijacked attach or exec stream of the Engine API (the multiplexed stdout/stderr framing)."""

    def __init__(self, stream: aiodocker.stream.Stream, exec_: aiodocker.execs.Exec | None = None) -> None:
        self._stream = stream
        self._exec = exec_

    async def open(self) -> DockerChannel:
        """Open the connection now rather than on first use (so that no output is missed)."""
        await engine_call(self._stream._init, attempts=1)
        return self

    async def write(self, data: bytes) -> None:
        try:
            await self._stream.write_in(data)
        except (RuntimeError, ConnectionError, AssertionError) as exc:  # (aiodocker asserts a live
            raise SessionDied(f"cannot write to the process: {exc or 'its stream is closed'}") from exc

    async def read(self) -> tuple[int, bytes] | None:
        msg = await self._stream.read_out()
        return None if msg is None else (msg.stream, bytes(msg.data))

    def close_input(self) -> bool:
        resp = self._stream._resp
        transport = resp.connection.transport if resp is not None and resp.connection is not None else None
        if transport is None or not transport.can_write_eof():
            return False
        transport.write_eof()
        return True

    async def exit_code(self) -> int | None:
        if self._exec is None:
            return None
        info = await engine_call(self._exec.inspect)
        return None if info.get("Running") else info.get("ExitCode")

    async def close(self) -> None:
        try:
            await self._stream.close()
        except Exception:  # the connection may already be gone
            pass

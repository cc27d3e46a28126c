"""The aiodocker clients of one engine, error translation, retries and deadlines.

Two aiodocker clients per engine and event loop, on two connection pools: one for control calls
(create, start, inspect, remove, archives), one for the long-lived attach and exec streams of
sessions. A stream holds its connection for as long as the session lives, so on one pool a few
hundred sessions would take every connection and control calls would wait for ever; the stream pool
has no limit, and every control call has a deadline (:data:`ENGINE_TIMEOUT_S`, or
``$INTERCODE_AGENTS_ENGINE_TIMEOUT``).

Transient engine errors (a reset connection, a 5xx, a 409 while removing) are retried with jittered
exponential backoff and a bound. An agent's command is never retried: only engine bookkeeping goes
through :func:`engine_call`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Any, TypeVar, cast

import aiodocker
import aiohttp
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_random_exponential

from intercode_agents.errors import EngineTimeout, EngineUnavailable, ImageMissing, SessionDied

T = TypeVar("T")

#: Seconds an engine control call may take before it fails with :class:`EngineTimeout`.
ENGINE_TIMEOUT_S = float(os.environ.get("INTERCODE_AGENTS_ENGINE_TIMEOUT") or 180)


class EngineClients:
    """The control and stream clients of one engine (``host``: a ``DOCKER_HOST`` value, or None for
    ``$DOCKER_HOST`` or the local socket), one pair per event loop, closed with the loop."""

    def __init__(self, host: str | None) -> None:
        self.host = host
        self._clients: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, tuple[aiodocker.Docker, aiodocker.Docker, object]
        ] = weakref.WeakKeyDictionary()

    def _pair(self) -> tuple[aiodocker.Docker, aiodocker.Docker, object]:
        loop = asyncio.get_running_loop()
        entry = self._clients.get(loop)
        if entry is None:
            try:
                control = aiodocker.Docker(url=self.host) if self.host else aiodocker.Docker()
            except (AssertionError, ValueError, OSError) as exc:
                where = self.host or "no Docker socket found and DOCKER_HOST is not set"
                raise EngineUnavailable(f"cannot reach the engine: {where}") from exc
            streams = aiodocker.Docker(url=control.docker_host, connector=_unlimited_like(control.connector))
            entry = self._clients[loop] = (control, streams, _closer(control, streams))
        return entry

    @property
    def control(self) -> aiodocker.Docker:
        """The running loop's client for control calls (created on first use)."""
        return self._pair()[0]

    @property
    def streams(self) -> aiodocker.Docker:
        """The running loop's client for attach and exec streams: its pool has no limit."""
        return self._pair()[1]

    async def close(self) -> None:
        """Close the running loop's clients now (they are closed with the loop otherwise)."""
        entry = self._clients.pop(asyncio.get_running_loop(), None)
        if entry is not None:
            await entry[0].close()
            await entry[1].close()


def _unlimited_like(connector: aiohttp.BaseConnector) -> aiohttp.BaseConnector:
    """A connector to the same engine as ``connector``, without a limit on open connections."""
    if isinstance(connector, aiohttp.UnixConnector):
        return aiohttp.UnixConnector(connector.path, limit=0)
    if isinstance(connector, aiohttp.TCPConnector):
        return aiohttp.TCPConnector(ssl=getattr(connector, "_ssl", True), limit=0)
    raise EngineUnavailable(f"unsupported engine connection {type(connector).__name__}")


def _closer(*clients: aiodocker.Docker) -> object:
    """An async generator, started up to its ``yield``, that closes ``clients`` when finalized.

    ``asyncio.run`` finalizes the loop's live async generators before it closes the loop
    (``loop.shutdown_asyncgens()``), so a script that never closes its clients still ends without
    aiohttp's "Unclosed connector" warnings.
    """

    async def close_at_shutdown() -> AsyncIterator[None]:
        try:
            yield
        finally:
            for client in clients:
                if not client.session.closed:
                    await client.close()

    agen = close_at_shutdown()
    first_step = cast(Coroutine[Any, Any, None], agen.__anext__())  # the loop now tracks agen
    with contextlib.suppress(StopIteration):
        first_step.send(None)  # runs to the yield at once: no await comes before it
    return agen


# How an engine says an exec cannot start because the container stopped: Docker with a 409, Podman with
# a 500 (which must not be retried as a transient server error).
_STOPPED = (
    (409, "is not running"),
    (409, "container state improper"),
    (500, "can only create exec sessions on running containers"),
)


def _stopped(exc: BaseException) -> bool:
    return isinstance(exc, aiodocker.DockerError) and any(
        exc.status == status and text in str(exc) for status, text in _STOPPED
    )


def is_transient(exc: BaseException) -> bool:
    if isinstance(exc, aiodocker.DockerError):
        return not _stopped(exc) and (exc.status >= 500 or exc.status == 409)
    return isinstance(exc, aiohttp.ServerDisconnectedError | aiohttp.ClientOSError) and not isinstance(
        exc, aiohttp.ClientConnectorError
    )


def translate(exc: BaseException, *, image: str | None = None) -> BaseException:
    """Turn low-level aiohttp/aiodocker errors into the project's typed errors."""
    if isinstance(exc, aiohttp.ClientConnectorError | FileNotFoundError | ConnectionRefusedError):
        return EngineUnavailable(str(exc))
    if isinstance(exc, aiodocker.DockerError) and exc.status == 900:  # aiodocker's "cannot connect"
        return EngineUnavailable(exc.message.split(" [")[0])
    if isinstance(exc, aiodocker.DockerError) and exc.status == 404 and image and "image" in str(exc).lower():
        return ImageMissing(image)
    if _stopped(exc):
        return SessionDied("the sandbox's container has stopped (its main process exited or was killed)")
    return exc


async def engine_call(
    fn: Callable[[], Awaitable[T]],
    *,
    image: str | None = None,
    attempts: int = 4,
    timeout: float | None = None,
) -> T:
    """Run one engine request under a deadline (``timeout``, else :data:`ENGINE_TIMEOUT_S`),
    retrying transient failures; raise typed errors for the rest."""
    deadline = ENGINE_TIMEOUT_S if timeout is None else timeout
    try:
        async for attempt in AsyncRetrying(
            stop=stop_after_attempt(attempts),
            wait=wait_random_exponential(multiplier=0.05, max=1.0),
            retry=retry_if_exception(is_transient),
            reraise=True,
        ):
            with attempt:
                try:
                    async with asyncio.timeout(deadline):
                        return await fn()
                except TimeoutError as exc:
                    raise EngineTimeout(deadline) from exc
    except Exception as exc:
        translated = translate(exc, image=image)
        if translated is exc:
            raise
        raise translated from exc
    raise AssertionError("unreachable")  # pragma: no cover

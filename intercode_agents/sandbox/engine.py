"""The Docker Engine client: one aiodocker client per event loop, error translation, retries.

Transient engine errors (a reset connection, a 5xx, a 409 while removing) are retried with jittered
exponential backoff and a bound. An agent's command is never retried: only engine bookkeeping goes
through :func:`engine_call`.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Any, TypeVar, cast

import aiodocker
import aiohttp
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_random_exponential

from intercode_agents.errors import EngineUnavailable, ImageMissing, SessionDied

T = TypeVar("T")

_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, tuple[aiodocker.Docker, object]] = (
    weakref.WeakKeyDictionary()
)


def docker_client() -> aiodocker.Docker:
    """The shared client of the running event loop (created on first use, closed with the loop)."""
    loop = asyncio.get_running_loop()
    entry = _clients.get(loop)
    if entry is None:
        try:
            client = aiodocker.Docker()
        except (AssertionError, ValueError, OSError) as exc:
            raise EngineUnavailable("no Docker socket found and DOCKER_HOST is not set") from exc
        entry = _clients[loop] = (client, _closer(client))
    return entry[0]


def _closer(client: aiodocker.Docker) -> object:
    """An async generator, started up to its ``yield``, that closes ``client`` when finalized.

    ``asyncio.run`` finalizes the loop's live async generators before it closes the loop
    (``loop.shutdown_asyncgens()``), so a script that never calls :func:`close_docker_client` still
    ends without aiohttp's "Unclosed connector" warnings.
    """

    async def close_at_shutdown() -> AsyncIterator[None]:
        try:
            yield
        finally:
            if not client.session.closed:
                await client.close()

    agen = close_at_shutdown()
    first_step = cast(Coroutine[Any, Any, None], agen.__anext__())  # the loop now tracks agen
    with contextlib.suppress(StopIteration):
        first_step.send(None)  # runs to the yield at once: no await comes before it
    return agen


async def close_docker_client() -> None:
    """Close the running loop's client now (it is closed with the loop otherwise)."""
    entry = _clients.pop(asyncio.get_running_loop(), None)
    if entry is not None:
        await entry[0].close()


def _stopped(exc: BaseException) -> bool:
    return isinstance(exc, aiodocker.DockerError) and exc.status == 409 and "is not running" in str(exc)


def is_transient(exc: BaseException) -> bool:
    if isinstance(exc, aiodocker.DockerError):
        return exc.status >= 500 or (exc.status == 409 and not _stopped(exc))
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


async def engine_call(fn: Callable[[], Awaitable[T]], *, image: str | None = None, attempts: int = 4) -> T:
    """Run one engine request, retrying transient failures; raise typed errors for the rest."""
    try:
        async for attempt in AsyncRetrying(
            stop=stop_after_attempt(attempts),
            wait=wait_random_exponential(multiplier=0.05, max=1.0),
            retry=retry_if_exception(is_transient),
            reraise=True,
        ):
            with attempt:
                return await fn()
    except Exception as exc:
        translated = translate(exc, image=image)
        if translated is exc:
            raise
        raise translated from exc
    raise AssertionError("unreachable")  # pragma: no cover


async def check_engine() -> str:
    """Ping the engine; return its version or raise EngineUnavailable with how to start it."""
    client = docker_client()
    try:
        info = await engine_call(client.version, attempts=2)
    except EngineUnavailable:
        raise
    except aiohttp.ClientError as exc:
        raise EngineUnavailable(str(exc)) from exc
    return str(info.get("Version", "?"))


async def image_exists(ref: str) -> bool:
    client = docker_client()
    try:
        await engine_call(lambda: client.images.inspect(ref))
    except aiodocker.DockerError as exc:
        if exc.status == 404:
            return False
        raise
    return True

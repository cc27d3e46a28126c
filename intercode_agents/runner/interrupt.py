"""Run a coroutine so that Ctrl-C or SIGTERM stops it cleanly.

The first SIGINT/SIGTERM cancels the coroutine: episodes in flight are cancelled, envs close (their
containers are removed), and :class:`Interrupted` is raised once that is done. A second signal
interrupts at once (an ``atexit`` hook still removes the containers the process created).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from intercode_agents.sandbox import close_docker_client, install_signal_handlers

T = TypeVar("T")
SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(Exception):
    """The run was stopped by a signal after a clean shutdown."""

    def __init__(self, signame: str) -> None:
        self.signame = signame
        super().__init__(f"stopped by {signame}")


def run_interruptible(main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """``asyncio.run(main())`` with the signal policy above and the engine client closed at the end."""
    install_signal_handlers()
    return asyncio.run(_guarded(main))


async def _guarded(main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    caught: list[str] = []

    def on_signal(signame: str) -> None:
        caught.append(signame)
        _restore(loop)  # the next signal interrupts at once
        if task is not None:
            task.cancel()

    installed = False
    with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):  # not the main thread
        for sig in SIGNALS:
            loop.add_signal_handler(sig, on_signal, sig.name)
        installed = True
    try:
        return await main()
    except asyncio.CancelledError:
        if caught:
            raise Interrupted(caught[0]) from None
        raise
    finally:
        if installed and not caught:
            _restore(loop)
        await close_docker_client()


def _restore(loop: asyncio.AbstractEventLoop) -> None:
    for sig in SIGNALS:
        with contextlib.suppress(ValueError, RuntimeError):
            loop.remove_signal_handler(sig)
    install_signal_handlers()

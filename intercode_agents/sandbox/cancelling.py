"""Cancel a task of one's own and wait for it to end, without absorbing a cancel of one's own.

``task.cancel(); with suppress(CancelledError): await task`` looks right and is not: when the caller
is itself cancelled during that wait, the suppress swallows the caller's cancel too, and the caller
goes on as if nothing happened (a run told to stop keeps playing). The same holds for Python 3.11's
``asyncio.wait_for`` when a cancel lands as its inner call completes; ruff bans it here (TID251).
"""

from __future__ import annotations

import asyncio
from typing import Any


async def cancel_and_wait(task: asyncio.Future[Any]) -> None:
    """Cancel ``task`` and return once it has ended. Its own outcome, error or cancel, is consumed;
    a cancel of the caller raises ``CancelledError`` here as anywhere else."""
    task.cancel()
    await asyncio.wait({task})
    if not task.cancelled():
        task.exception()  # retrieved, so that asyncio does not log it as never retrieved

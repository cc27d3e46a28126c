"""Headless Chromium driven over the DevTools protocol, for tests (and benchmarks) of the report page.

``async with HeadlessChromium() as browser: page = await browser.open(url)`` starts Debian's
``chromium`` (headless, no sandbox for root, no GPU, no background networking, a fresh profile),
connects to the page's DevTools socket on localhost, and lets a test evaluate JavaScript in it:
click, scroll, read the DOM. Nothing is fetched from the network.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import aiohttp

CHROMIUM = shutil.which("chromium")
FLAGS = (
    "--headless",
    "--no-sandbox",  # the tests run as root
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--window-size=1200,1000",
)


class Page:
    """One tab: ``evaluate`` runs an expression (awaiting a promise) and returns its JSON value."""

    def __init__(self, socket: aiohttp.ClientWebSocketResponse) -> None:
        self.socket = socket
        self._ids = itertools.count(1)

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        ident = next(self._ids)
        await self.socket.send_str(json.dumps({"id": ident, "method": method, "params": params}))
        async for message in self.socket:
            reply = json.loads(message.data)
            if reply.get("id") == ident:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]
        raise RuntimeError("the DevTools socket closed")

    async def evaluate(self, expression: str) -> Any:
        result = await self.send(
            "Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression!r} raised: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def wait_for(self, expression: str, timeout: float = 60) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = await self.evaluate(expression)
            if value:
                return value
            await asyncio.sleep(0.05)
        raise TimeoutError(f"{expression!r} stayed false for {timeout} s")

    async def goto(self, url: str) -> None:
        """Open ``url`` and wait until it has loaded (the page may rewrite its own #fragment)."""
        base = url.split("#", 1)[0]
        await self.send("Page.navigate", url=url)
        await self.wait_for(
            f"location.href.split('#')[0] === {json.dumps(base)} && document.readyState === 'complete'"
        )


class HeadlessChromium:
    def __init__(self) -> None:
        assert CHROMIUM is not None, "chromium is not installed"
        self._profile = tempfile.mkdtemp(prefix="chromium-profile-")
        self._proc: subprocess.Popen[bytes] | None = None
        self._session: aiohttp.ClientSession | None = None
        self.port = 0

    async def __aenter__(self) -> HeadlessChromium:
        self._proc = subprocess.Popen(  # noqa: ASYNC220 - started once, then only polled
            [
                CHROMIUM,
                *FLAGS,
                f"--user-data-dir={self._profile}",
                "--remote-debugging-port=0",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # its helpers (renderer, crashpad) share the group, so all go together
        )
        active = Path(self._profile) / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (active.is_file() and active.read_text().strip()):
            if time.monotonic() > deadline or self._proc.poll() is not None:
                raise RuntimeError("chromium did not open its DevTools port")
            await asyncio.sleep(0.1)
        self.port = int(active.read_text().split()[0])
        self._session = aiohttp.ClientSession()
        return self

    async def open(self, url: str) -> Page:
        assert self._session is not None
        async with self._session.get(f"http://127.0.0.1:{self.port}/json/list") as response:
            targets = await response.json(content_type=None)
        page = next(t for t in targets if t["type"] == "page")
        socket = await self._session.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0)
        tab = Page(socket)
        await tab.goto(url)
        return tab

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._session is not None:
            await self._session.close()
        if self._proc is not None:
            self._end_group(signal.SIGTERM)
            try:
                self._proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=20)
            # Chromium's helpers can outlive the browser by a moment and still write to the
            # profile (a late write made the removal fail with "Directory not empty").
            self._end_group(signal.SIGKILL)
        for _ in range(50):
            try:
                shutil.rmtree(self._profile)
                break
            except FileNotFoundError:
                break
            except OSError:
                await asyncio.sleep(0.1)
        else:
            shutil.rmtree(self._profile)

    def _end_group(self, sig: signal.Signals) -> None:
        assert self._proc is not None
        try:
            os.killpg(self._proc.pid, sig)
        except ProcessLookupError:
            pass

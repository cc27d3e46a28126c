"""Shared fixtures. Tests run against a real Docker engine and the project's real images."""

from __future__ import annotations

import os

import pytest

from intercode_agents.sandbox import close_docker_client

BASH_IMAGE = os.environ.get("INTERCODE_TEST_IMAGE", "intercode-agents/bash:latest")


@pytest.fixture(scope="session")
def bash_image() -> str:
    return BASH_IMAGE


@pytest.fixture(scope="session", autouse=True)
async def _docker_client_lifecycle():
    yield
    await close_docker_client()


@pytest.fixture(autouse=True)
def _asyncio_left_as_it_was():
    """Fail the test after which asyncio is patched for the whole process (nest_asyncio, which
    Inspect's synchronous API applies when called under a running loop): every later test would then
    run with other cancellation and shielding, and their clean-up checks fail far from the cause."""
    yield
    import asyncio

    assert not hasattr(asyncio, "_nest_patched"), "asyncio was patched by nest_asyncio during this test"

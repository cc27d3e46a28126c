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

"""The shipped conformance suite (``intercode_agents/sandbox/conformance``) on this repository's engines.

``INTERCODE_CONFORMANCE_BACKENDS`` is a comma-separated list of

- ``local``: the machine's Docker engine, with its fast paths (the default);
- ``dockerd``: a second dockerd with its own data root and socket, reached as a remote engine would
  be (no fast paths), started here (see ``tests/engines.py``);
- ``podman``: rootful Podman through its Docker-compatible API service, started here;
- any engine string (``tcp://10.0.0.5:2376``, ``mybackend:...`` of a third-party backend).

The suite's own fixtures name ``local`` and engine strings; this one adds ``dockerd`` and ``podman``,
and copies the images a test needs to an engine that lacks them (a save from the local engine and a
load into the other). A third-party backend needs none of this: ``pytest --pyargs
intercode_agents.sandbox.conformance`` (see docs/ARCHITECTURE.md, "Backends").
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import pytest

from intercode_agents.images import copy_refs
from intercode_agents.sandbox import resolve_backend
from intercode_agents.sandbox.conformance.fixtures import (  # noqa: F401 - the suite's fixtures and hook
    backend,
    close_engine_clients,
    engine,
    fast_paths,
    pytest_generate_tests,
)
from tests import engines

_started: list[str] = []


@pytest.fixture(scope="session")
def conformance_engine_spec(bash_image: str) -> Callable[[str], str]:
    """``local``, ``dockerd``, ``podman`` or an engine string; a non-local engine gets the image."""

    def spec(name: str) -> str:
        if name == "local":
            return "docker"
        if name in engines.ENGINES:
            why = engines.available(name)
            if why is not None:
                pytest.skip(f"the {name} backend cannot run here: {why}")
            text = engines.start(name).spec
            if name not in _started:
                _started.append(name)
        else:
            text = name
        copy_refs([bash_image], source="docker", target=resolve_backend(text))
        return text

    return spec


@pytest.fixture(scope="session", autouse=True)
def _stop_started_engines() -> Iterator[None]:
    yield
    if os.environ.get("INTERCODE_TEST_KEEP_ENGINES") != "1":
        for name in _started:
            engines.stop(name)

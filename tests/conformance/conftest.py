"""The conformance suite's backends: every test here runs once per backend it is given.

``INTERCODE_CONFORMANCE_BACKENDS`` is a comma-separated list of

- ``local``: the machine's Docker engine, with its fast paths (the default);
- ``dockerd``: a second dockerd with its own data root and socket, reached as a remote engine would
  be (no fast paths), started by this fixture (see ``tests/engines.py``);
- ``podman``: rootful Podman through its Docker-compatible API service, started by this fixture;
- any engine string (``tcp://10.0.0.5:2376``, ``mybackend:...`` of a third-party backend).

The images a test needs are copied to an engine that lacks them (a save from the local engine and
a load into the other). A third-party backend runs the suite with
``INTERCODE_CONFORMANCE_BACKENDS='mytype:ADDRESS' python -m pytest tests/conformance``, once its
package is installed (its ``intercode_agents.backends`` entry point registers the type) and the
bash image is on its engine (``intercode-agents images copy bash --to 'mytype:ADDRESS'``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from intercode_agents.images import copy_refs
from intercode_agents.sandbox import Backend, resolve_backend
from tests import engines

SELECTED = [
    b.strip() for b in os.environ.get("INTERCODE_CONFORMANCE_BACKENDS", "local").split(",") if b.strip()
]


@dataclass(frozen=True)
class Engine:
    """A backend under test, and the engine string that names it (for child processes)."""

    name: str
    spec: str
    backend: Backend


_started: list[str] = []


def _engine(name: str, images: list[str]) -> Engine:
    if name == "local":
        spec = "docker"
    elif name in engines.ENGINES:
        why = engines.available(name)
        if why is not None:
            pytest.skip(f"the {name} backend cannot run here: {why}")
        started = engines.start(name)
        if name not in _started:
            _started.append(name)
        spec = started.spec
    else:
        spec = name
    backend = resolve_backend(spec)
    if name != "local":
        copy_refs(images, source="docker", target=backend)
    return Engine(name, spec, backend)


@pytest.fixture(scope="session", params=SELECTED)
def engine(request: pytest.FixtureRequest, bash_image: str) -> Iterator[Engine]:
    yield _engine(request.param, [bash_image])


@pytest.fixture(scope="session")
def backend(engine: Engine) -> Backend:
    return engine.backend


@pytest.fixture(scope="session", autouse=True)
def _stop_started_engines() -> Iterator[None]:
    yield
    if os.environ.get("INTERCODE_TEST_KEEP_ENGINES") != "1":
        for name in _started:
            engines.stop(name)


@pytest.fixture(scope="session")
def fast_paths(engine: Engine) -> bool:
    """Whether the backend under test must read its sandboxes from this host (the local engine,
    as root): there the suite checks the fast paths against the slow ones; elsewhere only the slow
    paths answer, and must give the same expected answers."""
    return engine.name == "local" and os.geteuid() == 0

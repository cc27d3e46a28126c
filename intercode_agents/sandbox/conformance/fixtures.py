"""The conformance suite's fixtures: the backends under test, and the image the suite runs.

Every test that asks for ``engine`` or ``backend`` runs once per backend named by
``$INTERCODE_CONFORMANCE_BACKENDS`` (comma-separated; ``local`` when it is not set): ``local`` is
the machine's Docker engine, any other name an engine string (``tcp://10.0.0.5:2376``,
``mytype:ADDRESS`` of a third-party backend). A test suite that gives names of its own (the
repository's starts a second dockerd and Podman for ``dockerd`` and ``podman``) overrides the
``conformance_engine_spec`` fixture. The image is ``$INTERCODE_TEST_IMAGE``, else
``intercode-agents/bash:latest``; it must be on every engine under test.

The suite's coroutine tests and fixtures run on one event loop for the whole session, whatever the
project's asyncio mode (the repository's is ``auto``; pytest-asyncio's default is ``strict``).
"""

from __future__ import annotations

import inspect
import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest
import pytest_asyncio

from intercode_agents.sandbox import Backend, close_engines, resolve_backend
from intercode_agents.sandbox.config import LABEL_RUN

BACKENDS_ENV = "INTERCODE_CONFORMANCE_BACKENDS"
SLEEPER = ["sleep", "infinity"]  # a command that keeps a sandbox alive and does nothing else

__all__ = [
    "SLEEPER",
    "Engine",
    "backend",
    "bash_image",
    "close_engine_clients",
    "conformance_engine_spec",
    "containers_of_run",
    "engine",
    "fast_paths",
    "pytest_generate_tests",
    "pytest_pycollect_makeitem",
]


@dataclass(frozen=True)
class Engine:
    """A backend under test, and the engine string that names it (for child processes)."""

    name: str
    spec: str
    backend: Backend


def selected() -> list[str]:
    """The names of the backends under test. (An environment variable, not a pytest option: pytest
    reads a package's conftest.py only after it parsed the command line under ``--pyargs``.)"""
    text = os.environ.get(BACKENDS_ENV) or "local"
    return [name.strip() for name in text.split(",") if name.strip()]


def containers_of_run(run_id: str, backend: Backend) -> list[str]:
    """IDs of the containers (running or not) on ``backend`` labelled with the run ``run_id``."""
    return sorted(c.id for c in backend.leftovers_now({LABEL_RUN: run_id}))


# -- pytest hooks ---------------------------------------------------------------------------------
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Each test that uses a backend runs once per backend under test."""
    if "engine" in metafunc.fixturenames:
        metafunc.parametrize("engine", selected(), indirect=True, scope="session")


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: Any, name: str, obj: object) -> None:
    """Mark the suite's coroutine tests to run on the session's event loop (before pytest-asyncio
    looks at them)."""
    module = getattr(obj, "__module__", None) or ""
    if inspect.iscoroutinefunction(obj) and module.startswith(__package__ or "~"):
        if not any(mark.name == "asyncio" for mark in getattr(obj, "pytestmark", [])):
            pytest.mark.asyncio(loop_scope="session")(obj)


# -- fixtures -------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def bash_image() -> str:
    return os.environ.get("INTERCODE_TEST_IMAGE", "intercode-agents/bash:latest")


@pytest.fixture(scope="session")
def conformance_engine_spec() -> Callable[[str], str]:
    """How a name of the backends under test becomes an engine string: ``local`` is the machine's
    Docker engine, any other name is one already. Override it to give names of your own."""
    return lambda name: "docker" if name == "local" else name


@pytest.fixture(scope="session")
def engine(request: pytest.FixtureRequest, conformance_engine_spec: Callable[[str], str]) -> Engine:
    name = request.param
    spec = conformance_engine_spec(name)
    return Engine(name, spec, resolve_backend(spec))


@pytest.fixture(scope="session")
def backend(engine: Engine) -> Backend:
    return engine.backend


@pytest.fixture(scope="session")
def fast_paths(engine: Engine) -> bool:
    """Whether the backend under test must read its sandboxes from this host (the local engine,
    as root): there the suite checks the fast paths against the slow ones; elsewhere only the slow
    paths answer, and must give the same expected answers."""
    return engine.name == "local" and os.geteuid() == 0


@pytest_asyncio.fixture(scope="session", loop_scope="session", autouse=True)
async def close_engine_clients() -> AsyncIterator[None]:
    """Close the session loop's connections to every engine at the end."""
    yield
    await close_engines()


# One command per channel a process can write, as root in its sandbox (the launcher's own limits
# and scheduling through a session, whose parent the launcher is).
PLANTS = {
    "overlay": "echo planted > /tmp/planted.txt",
    "overlay-changed-back": "touch /srv/planted && rm /srv/planted",
    "dev-shm": "echo planted > /dev/shm/planted.txt",
    "dev-tmpfs": "echo planted > /dev/planted",
    "cgroup-tmpfs": "echo planted > /sys/fs/cgroup/planted",
    "hostname-file": "echo planted > /etc/hostname",
    "hosts-file-restored": "cp /etc/hosts /tmp/h; echo x >> /etc/hosts; cat /tmp/h > /etc/hosts; rm /tmp/h",
    "sysv-shm": "ipcmk -M 4096",
    "sysv-msg": "ipcmk -Q",
    "sysv-sem": "ipcmk -S 1",
    "posix-mqueue": "touch /dev/mqueue/planted",
    "process": "nohup sleep 1000 >/dev/null 2>&1 & disown",
    "launcher-limits": "prlimit --pid $PPID --nofile=77:77",
    "launcher-nice": "renice -n 7 -p $PPID",
    "init-limits": "prlimit --pid 1 --nproc=99:99",
}

"""Placement is the harness's: any backend, a third party's included, is counted and left out when it
stops answering, without a line of placement code of its own; backend types come from one
registry, and engine strings and configs name them as before."""

from __future__ import annotations

import subprocess
import sys
from typing import Literal

import pytest

from intercode_agents.errors import ConfigError, EngineUnavailable
from intercode_agents.sandbox import Backend, BackendConfig, Sandbox, register_backend, resolve_engines
from intercode_agents.sandbox.backends import BACKENDS, parse_config, resolve_backend
from intercode_agents.sandbox.docker.backend import DockerBackend
from intercode_agents.sandbox.placement import Metered
from tests.docker_helpers import SLEEPER

LOCAL = "unix:///var/run/docker.sock"


class RelayConfig(BackendConfig):
    type: Literal["relay"] = "relay"
    host: str | None = None


@register_backend
class RelayBackend(DockerBackend):
    """A backend type added by a script: it drives the local engine and keeps no placement state."""

    type = "relay"
    config_class = RelayConfig

    @classmethod
    def from_config(cls, config: RelayConfig) -> RelayBackend:  # type: ignore[override]
        return cls(config.host, name=config.name or "relay")


def test_engine_strings_and_configs_name_the_registered_types():
    assert {"docker", "podman", "relay"} <= set(BACKENDS.names())
    podman = parse_config("podman:unix:///run/p.sock?slots=3&nproc=99")
    assert podman.model_dump() == {
        "type": "podman", "name": None, "slots": 3, "host": "unix:///run/p.sock", "nofile": 1024, "nproc": 99,
    }  # fmt: skip
    assert parse_config(f"relay:{LOCAL}?slots=2") == RelayConfig(host=LOCAL, slots=2)
    assert resolve_backend({"type": "relay", "host": LOCAL, "slots": 2}) is resolve_backend(
        f"relay:{LOCAL}?slots=2"
    )
    with pytest.raises(ConfigError, match=r"unknown backend type 'nope'; known: .*docker.*relay"):
        parse_config({"type": "nope"})
    with pytest.raises(ConfigError, match="needs a `config_class`"):

        @register_backend
        class Bare(DockerBackend):
            type = "bare"
            config_class = None  # type: ignore[assignment]


def test_the_docker_client_library_is_imported_only_when_a_docker_engine_is_used():
    code = (
        "import sys\n"
        "import intercode_agents.envs\n"
        "from intercode_agents.sandbox import resolve_engines\n"
        "print('aiodocker' in sys.modules)\n"
        "resolve_engines('docker')\n"
        "print('aiodocker' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True"]


async def test_a_backend_without_placement_code_is_counted(bash_image):
    engines = resolve_engines(f"docker?slots=2,relay:{LOCAL}?slots=3")
    assert resolve_engines(["docker?slots=2", f"relay:{LOCAL}?slots=3"]) is engines  # one set for a run
    assert all(isinstance(b, Metered) for b in engines.backends)
    assert engines.describe() == [
        {"engine": "local", "slots": 2, "live": 0, "down": False},
        {"engine": "relay", "slots": 3, "live": 0, "down": False},
    ]
    async with Sandbox(bash_image, backend=engines, cmd=SLEEPER) as first:
        assert first.backend.name == "relay"  # the most free slots
        assert type(first.backend.engine) is RelayBackend
        info = await first.backend.inspect(first.id)  # what is not in the contract passes through
        assert info["Id"] == first.id
        relay = {row["engine"]: row for row in engines.describe()}["relay"]
        assert relay["live"] == 1
    assert [row["live"] for row in engines.describe()] == [0, 0]


async def test_an_engine_that_stops_answering_is_left_out(bash_image):
    engines = resolve_engines("tcp://127.0.0.1:1,docker")  # the first refuses every connection
    local = engines.backends[1]
    with pytest.raises(EngineUnavailable):  # a tie: the first engine takes its turn
        await Sandbox(bash_image, backend=engines, cmd=SLEEPER).start()
    assert [row["down"] for row in engines.describe()] == [True, False]
    async with Sandbox(bash_image, backend=engines, cmd=SLEEPER) as sb:
        assert sb.backend is local


def test_a_backend_built_by_hand_gets_the_default_slots():
    class Elsewhere(DockerBackend):
        type = "elsewhere"

    engines = resolve_engines([Elsewhere("unix:///nowhere.sock", name="by-hand")])
    assert engines.describe()[0]["slots"] == 16
    assert isinstance(engines.first, Backend) and engines.first.type == "elsewhere"

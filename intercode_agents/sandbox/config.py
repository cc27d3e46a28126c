"""Sandbox defaults: isolation, limits and labels, engine-neutral (each backend maps them onto its
engine: see :mod:`intercode_agents.sandbox.docker.create_body`). Every field can be overridden per sandbox."""

from __future__ import annotations

import dataclasses
import os
import uuid
from dataclasses import dataclass, field
from typing import Any

from intercode_agents.errors import ConfigError

LABEL = "intercode-agents"  # every container the project creates carries this label ("1")
LABEL_RUN = "intercode-agents.run"
LABEL_PID = "intercode-agents.pid"

RUN_ID_ENV = "INTERCODE_AGENTS_RUN_ID"
#: A new id per process (or the one ``$INTERCODE_AGENTS_RUN_ID`` gives: a Ray run's actors share
#: their run's); containers of one process share it so a run's leftovers can be found.
RUN_ID = os.environ.get(RUN_ID_ENV) or uuid.uuid4().hex[:12]

# Enough for root inside the sandbox to own, chmod and signal its own files and processes.
DEFAULT_CAPS = ("CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID")


def _parse_bytes(value: int | str) -> int:
    if isinstance(value, int):
        return value
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    text = value.strip().lower().rstrip("b")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


@dataclass
class SandboxConfig:
    """How a sandbox container is created. The defaults isolate; none publishes a port."""

    memory: int | str = "1g"
    pids_limit: int = 512
    cpu_shares: int = 512
    nano_cpus: int | None = None  # e.g. 1_000_000_000 for one CPU
    network_mode: str = "none"
    cap_add: tuple[str, ...] = DEFAULT_CAPS
    no_new_privileges: bool = True
    init: bool = True
    stop_timeout: int = 1
    cmd: list[str] | None = None  # None: the image's CMD
    workdir: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    user: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    tmpfs: dict[str, str] = field(default_factory=dict)
    read_only: bool = False
    hostname: str | None = "sandbox"  # the same in every sandbox, so outputs that print it compare equal
    # "auto": use the backend's fast paths where it has them (the local Docker engine, as root: the
    # overlay upper directory, the cgroup, the container's files from this host); "engine": always
    # the slow paths every backend has (the engine's API and read-only scripts in the sandbox).
    diff_source: str = "auto"
    # The most the sandbox may write to the engine's disk (its writable layer), or None for no cap.
    # Enforced by the engine where it can (StorageOpt size), else by RLIMIT_FSIZE and a watchdog
    # (see intercode_agents.sandbox.disk_guard).
    disk_limit: int | str | None = "1g"
    # Start sessions through an in-container launcher bash (a fork each) instead of a docker exec
    # each. The launcher is the container's main process when the image's command only idles
    # (`sleep infinity`) and `cmd` is not set, else it starts by one docker exec; images without
    # bash fall back to docker exec sessions by themselves.
    launcher: bool = True

    @property
    def disk_limit_bytes(self) -> int | None:
        return None if self.disk_limit in (None, 0, "") else _parse_bytes(self.disk_limit)

    @property
    def memory_bytes(self) -> int:
        return _parse_bytes(self.memory)

    def with_overrides(self, **overrides: Any) -> SandboxConfig:
        """A copy with ``overrides`` (field names) applied, checked: a bad field or value is a
        ConfigError that names it."""
        config = dataclasses.replace(self)
        fields = {f.name for f in dataclasses.fields(SandboxConfig)}
        for key, value in overrides.items():
            if key not in fields:
                raise ConfigError(f"unknown sandbox option {key!r}; known: {', '.join(sorted(fields))}")
            setattr(config, key, value)
        if config.diff_source not in ("auto", "engine"):
            raise ConfigError(f"diff_source must be 'auto' or 'engine', not {config.diff_source!r}")
        if not isinstance(config.launcher, bool):
            raise ConfigError(f"launcher must be true or false, not {config.launcher!r}")
        try:
            limit = config.disk_limit_bytes
        except (TypeError, ValueError) as exc:
            raise ConfigError(
                f"disk_limit must be a size such as '1g' or null, not {config.disk_limit!r}"
            ) from exc
        if limit is not None and limit < 1 << 20:
            raise ConfigError(f"disk_limit must be at least 1m, not {config.disk_limit!r}")
        return config

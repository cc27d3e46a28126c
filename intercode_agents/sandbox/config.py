"""Container defaults: isolation, limits and labels. Every field can be overridden per sandbox."""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass, field
from typing import Any

LABEL = "intercode-agents"  # every container the project creates carries this label ("1")
LABEL_RUN = "intercode-agents.run"
LABEL_PID = "intercode-agents.pid"

#: A new id per process; containers of one process share it so a run's leftovers can be found.
RUN_ID = os.environ.get("INTERCODE_AGENTS_RUN_ID") or uuid.uuid4().hex[:12]

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
    # "auto": read file-system changes from the overlay upper directory when this host can (a local
    # engine, as root), else from the Engine API; "engine": always the Engine API.
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
        return None if self.disk_limit in (None, 0, "") else _parse_bytes(self.disk_limit)  # type: ignore[arg-type]

    def container_spec(self, image: str) -> dict[str, Any]:
        """The Engine API body of ``POST /containers/create``."""
        mem = _parse_bytes(self.memory)
        host: dict[str, Any] = {
            "NetworkMode": self.network_mode,
            "Memory": mem,
            "MemorySwap": mem,  # no swap: a memory bomb meets the OOM killer, not the disk
            "PidsLimit": self.pids_limit,
            "CpuShares": self.cpu_shares,
            "CapDrop": ["ALL"],
            "CapAdd": list(self.cap_add),
            "SecurityOpt": ["no-new-privileges"] if self.no_new_privileges else [],
            "Init": self.init,
            "PortBindings": {},
            "PublishAllPorts": False,
            "ReadonlyRootfs": self.read_only,
        }
        if self.nano_cpus:
            host["NanoCpus"] = self.nano_cpus
        if self.disk_limit_bytes:
            limit = self.disk_limit_bytes
            host["Ulimits"] = [{"Name": "fsize", "Soft": limit, "Hard": limit}]
        if self.tmpfs:
            host["Tmpfs"] = dict(self.tmpfs)
        spec: dict[str, Any] = {
            "Image": image,
            "Labels": {LABEL: "1", LABEL_RUN: RUN_ID, LABEL_PID: str(os.getpid()), **self.labels},
            "HostConfig": host,
            "StopTimeout": self.stop_timeout,
            "Tty": False,
            "OpenStdin": False,
            "NetworkDisabled": self.network_mode == "none",
            "Env": [f"{k}={v}" for k, v in self.env.items()],
        }
        if self.cmd is not None:
            spec["Cmd"] = list(self.cmd)
        if self.workdir:
            spec["WorkingDir"] = self.workdir
        if self.user:
            spec["User"] = self.user
        if self.hostname:
            spec["Hostname"] = self.hostname
        return spec

"""The Engine API body of ``POST /containers/create`` for a sandbox (Docker's and Podman's compat API)."""

from __future__ import annotations

from typing import Any

from intercode_agents.sandbox.contract import CreateRequest


def container_body(request: CreateRequest) -> dict[str, Any]:
    """Isolation on by default: no network, memory without swap, a pids limit, CPU shares, every
    capability dropped but a few root needs for its own files, no-new-privileges, an init, no
    published port, and no container log.

    The engine keeps no log of a sandbox's output: sessions started through the launcher write to
    the main process's stream, which the harness reads by its attach, and a log driver would copy
    every byte of it again (dockerd encodes each line and appends it to a file on the engine's disk,
    outside the sandbox's disk cap, with no size limit by default)."""
    config = request.config
    mem = config.memory_bytes
    host: dict[str, Any] = {
        "NetworkMode": config.network_mode,
        "Memory": mem,
        "MemorySwap": mem,  # no swap: a memory bomb meets the OOM killer, not the disk
        "PidsLimit": config.pids_limit,
        "CpuShares": config.cpu_shares,
        "CapDrop": ["ALL"],
        "CapAdd": list(config.cap_add),
        "SecurityOpt": ["no-new-privileges"] if config.no_new_privileges else [],
        "Init": config.init,
        "PortBindings": {},
        "PublishAllPorts": False,
        "ReadonlyRootfs": config.read_only,
        "LogConfig": {"Type": "none", "Config": {}},
    }
    if config.nano_cpus:
        host["NanoCpus"] = config.nano_cpus
    limit = config.disk_limit_bytes
    if limit:
        host["Ulimits"] = [{"Name": "fsize", "Soft": limit, "Hard": limit}]
    if config.tmpfs:
        host["Tmpfs"] = dict(config.tmpfs)
    body: dict[str, Any] = {
        "Image": request.image,
        "Labels": dict(request.labels),
        "HostConfig": host,
        "StopTimeout": config.stop_timeout,
        "Tty": False,
        "OpenStdin": False,
        "NetworkDisabled": config.network_mode == "none",
        "Env": [f"{k}={v}" for k, v in config.env.items()],
    }
    command = request.command if request.command is not None else config.cmd
    if command is not None:
        body["Cmd"] = list(command)
    if request.main_stdin:
        body |= {"OpenStdin": True, "StdinOnce": False, "AttachStdin": True}
        body |= {"AttachStdout": True, "AttachStderr": True}
    if config.workdir:
        body["WorkingDir"] = config.workdir
    if config.user:
        body["User"] = config.user
    if config.hostname:
        body["Hostname"] = config.hostname
    return body


def with_storage_quota(body: dict[str, Any], limit: int) -> dict[str, Any]:
    """``body`` with the engine asked to cap the writable layer at ``limit`` bytes."""
    return body | {"HostConfig": body["HostConfig"] | {"StorageOpt": {"size": str(limit)}}}

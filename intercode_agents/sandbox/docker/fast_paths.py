"""The local Docker engine's fast paths: a container read from the engine's own host.

When the engine runs on this host and we are root, its overlay2 storage, the container's cgroup and
its init's ``/proc/<pid>/root`` are readable here, so the change list (1-3 ms instead of the Engine
API's 200-350 ms walk), the process list (a read of ``cgroup.procs`` instead of ``top``), the disk
usage, the files scoring reads and the processes a timeout signals need neither the engine nor a
process in the sandbox. Anything else (a remote engine, another storage driver, no root) gets no
:class:`LocalHost`, and the sandbox layer uses the slow paths, which give the same answers.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Sequence
from typing import Any

from intercode_agents.sandbox import host_runtime, host_sockets, signals
from intercode_agents.sandbox.container_fs import ContainerFiles, Unreadable
from intercode_agents.sandbox.contract import Change, HostAccess, HostUnreadable, Proc
from intercode_agents.sandbox.disk_guard import upper_usage
from intercode_agents.sandbox.docker.cgroup import cgroup_procs_file, read_pids
from intercode_agents.sandbox.docker.overlay import OverlayLayers, OverlayUnreadable


class LocalHost(HostAccess):
    def __init__(self, overlay: OverlayLayers, procs_file: str | None, files: ContainerFiles | None) -> None:
        self.overlay = overlay
        self.procs_file = procs_file
        self.files = files

    @classmethod
    def from_inspect(cls, info: dict[str, Any]) -> LocalHost | None:
        """The fast paths of a running container (``GET /containers/{id}/json``), or None when its
        storage cannot be read here."""
        overlay = OverlayLayers.from_inspect(info)
        if overlay is None:
            return None
        procs_file = cgroup_procs_file(info)
        files = None
        if procs_file is not None:  # the init's PID is this container's: read its files
            with contextlib.suppress(Unreadable):
                files = ContainerFiles.of_process(int(info["State"]["Pid"]))
        return cls(overlay, procs_file, files)

    def changes(self) -> list[Change]:
        try:
            return self.overlay.changes()
        except (OverlayUnreadable, OSError) as exc:
            raise HostUnreadable(str(exc)) from exc

    def layer_entries(self) -> Any:
        try:
            return self.overlay.entries()
        except OSError as exc:
            raise HostUnreadable(str(exc)) from exc

    def usage(self) -> int:
        try:
            return upper_usage(self.overlay.upper)
        except OSError as exc:
            raise HostUnreadable(str(exc)) from exc

    def pids(self) -> frozenset[int]:
        if self.procs_file is None:
            raise HostUnreadable("the container's cgroup is not readable here")
        try:
            return read_pids(self.procs_file)
        except OSError as exc:
            self.procs_file = None
            raise HostUnreadable(str(exc)) from exc

    def processes(self) -> list[Proc]:
        return signals.processes_of(self.pids())

    def connect_unix(self, pid: int, path: str) -> socket.socket:
        return host_sockets.connect(self.processes(), pid, path)

    def runtime_listing(self, harness: Sequence[int]) -> str:
        if self.files is None:
            raise HostUnreadable("the container's files are not readable here")
        try:
            return host_runtime.runtime_listing(self.files, self.processes(), harness)
        except OSError as exc:
            raise HostUnreadable(str(exc)) from exc

    def kill_all(self) -> None:
        """SIGKILL to the container's init (PID 1 of its namespace) through a pidfd: the kernel then
        kills every other process of the namespace."""
        init = [p for p in self.processes() if p.pid == 1]
        if not init:
            raise HostUnreadable("the container's init is not among its processes")
        signals.kill_now(init)

"""Podman through its Docker-compatible API service (``podman system service``).

The compat API is close enough to Docker's that :class:`~intercode_agents.sandbox.docker.backend.
DockerBackend` drives it; where Podman differs, this adapter handles it (the conformance suite runs
every sandbox behaviour on it):

- **Processes.** Docker's ``top`` with ``ps_args=-o pid`` runs ``ps`` on the host; Podman's runs it
  *inside* the container (so the listing would start a process in the sandbox and list it). Its own
  descriptors (``ps_args=hpid``) are read from ``/proc`` on the engine's host instead: host PIDs, as
  Docker's are, and nothing starts in the sandbox.
- **Disk cap.** Podman refuses ``StorageOpt size`` unless its storage is overlay on xfs with
  ``pquota`` (a 500, not Docker's 400); the adapter notices the refusal like Docker's, and the
  sandbox's guard (``RLIMIT_FSIZE`` and the watchdog on ``SizeRw``) caps the disk instead.
- **Rlimits.** A create that names any ulimit (the disk guard's ``fsize``) makes Podman drop its
  configured defaults, and its runtime then asks for more open files and processes than the service
  may grant (runc's "error setting rlimit type 7: operation not permitted"): the adapter names
  ``nofile`` and ``nproc`` too, at the config's values (``?nofile=N&nproc=N`` in an engine string),
  which must not exceed the service's own hard limits.
- **Change list.** Podman's ``GET /containers/{id}/changes`` reads its overlay upper directory by
  containers/storage's rules, not Docker's (moby's naive diff): a folder whose modification time
  changed is "C" though nothing in it did (a file made and deleted in it), one whose owner changed is
  not, a file copied up unchanged (a hard link made, a mode set and set back) is "C", a folder
  deleted and made again is "D", and the call fails with a 500 when a folder replaced a file (``stat
  .../inner: not a directory``). The adapter says so (``docker_changes = False``), and the sandbox
  layer compares listings of the root file system taken from inside the sandbox at start and at each
  question, by Docker's rules (:mod:`intercode_agents.sandbox.root_listing`): the same answers as
  Docker's, for 0.15-0.2 s a listing of a 300 MB image.
- **No fast paths.** Podman's storage is its own (``overlay``, not ``overlay2``; rootless, it lives in
  a user namespace this host cannot read as the engine does), so every question takes the slow
  path: the Engine API, or a read-only script in the sandbox.
- **Limits.** Rootless Podman on a cgroup v1 host ignores memory, pids and CPU limits ("Resource
  limits are not supported and ignored on cgroups V1 rootless systems"), which would let a memory
  bomb reach the host; run it rootful there (docs/ARCHITECTURE.md, "Backends").

Attach before start, exec streams (the same multiplexed framing), archives, labels and ``Init``
(catatonit) behave as Docker's.
"""

from __future__ import annotations

from typing import Any

from intercode_agents.sandbox.backends import PodmanConfig
from intercode_agents.sandbox.contract import CreateRequest
from intercode_agents.sandbox.docker.backend import DockerBackend
from intercode_agents.sandbox.docker.wire import query_json


class PodmanBackend(DockerBackend):
    type = "podman"
    fast_paths = False
    docker_changes = False  # its change list has other rules (module docstring)
    config_class = PodmanConfig

    def __init__(self, host: str, *, name: str | None = None, nofile: int = 1024, nproc: int = 4096) -> None:
        super().__init__(host, name=name or f"podman:{host}", fast_paths=False)
        self.rlimits = {"nofile": nofile, "nproc": nproc}

    @classmethod
    def from_config(cls, config: PodmanConfig) -> PodmanBackend:  # type: ignore[override]
        return cls(config.host, name=config.name, nofile=config.nofile, nproc=config.nproc)

    def adapt(self, body: dict[str, Any], request: CreateRequest) -> dict[str, Any]:
        host = body["HostConfig"]
        named = {u["Name"] for u in host.get("Ulimits") or []}
        if named:
            extra = [{"Name": n, "Soft": v, "Hard": v} for n, v in self.rlimits.items() if n not in named]
            host["Ulimits"] = [*host["Ulimits"], *extra]
        return body

    async def processes(self, sandbox_id: str) -> frozenset[int]:
        client = self.clients.control
        found = await self._call(
            lambda: query_json(client, f"containers/{sandbox_id}/top", {"ps_args": "hpid"})
        )
        column = found.get("Titles", []).index("HPID")
        return frozenset(int(row[column]) for row in found.get("Processes") or [])

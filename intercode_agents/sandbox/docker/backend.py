"""The Docker backend: a Docker engine (local or remote) through its Engine API, with aiodocker.

On a local engine, as root, :class:`~intercode_agents.sandbox.docker.fast_paths.LocalHost` adds the fast
paths. A remote engine (``host="tcp://127.0.0.1:2376"``, ``unix:///run/other.sock`` with its storage
elsewhere) gets none, and the sandbox layer uses the slow paths.
"""

from __future__ import annotations

import io
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import aiodocker
import aiodocker.execs

from intercode_agents.errors import EngineUnavailable, ImageMissing
from intercode_agents.sandbox import host_limits
from intercode_agents.sandbox.backends import BackendConfig, DockerConfig
from intercode_agents.sandbox.contract import (
    Backend,
    Change,
    ChangeKind,
    CreateRequest,
    ImageInfo,
    Leftover,
    Started,
)
from intercode_agents.sandbox.docker.client import EngineClients, engine_call
from intercode_agents.sandbox.docker.create_body import container_body, with_storage_quota
from intercode_agents.sandbox.docker.fast_paths import LocalHost
from intercode_agents.sandbox.docker.wire import DockerChannel, query_json

T = TypeVar("T")
_KINDS: dict[int, ChangeKind] = {0: "C", 1: "A", 2: "D"}


class DockerBackend(Backend):
    """A Docker engine. ``host`` is a ``DOCKER_HOST`` value (``unix:///...``, ``tcp://127.0.0.1:2376``);
    None means ``$DOCKER_HOST`` or the local socket. ``fast_paths=False`` never reads the engine's
    storage from this host, even where it could."""

    config_class: type[BackendConfig] = DockerConfig
    type = "docker"
    fast_paths = True

    def __init__(self, host: str | None = None, *, name: str | None = None, fast_paths: bool = True) -> None:
        super().__init__(name or host or os.environ.get("DOCKER_HOST") or "local")
        self.host = host
        self.clients = EngineClients(host)
        # Only an engine reached through a local socket can be read from this host: a TCP or SSH
        # address is another machine's engine, whose storage paths and PIDs mean nothing here.
        address = host or os.environ.get("DOCKER_HOST") or "unix://"
        self.use_fast_paths = fast_paths and type(self).fast_paths and address.startswith("unix://")
        if address.startswith("unix://"):  # the engine's sandboxes share this kernel's budgets
            host_limits.warn_once()
        self._quota_refused = False  # the engine refused a StorageOpt size once (overlay2 on ext4)

    @classmethod
    def from_config(cls, config: DockerConfig) -> DockerBackend:
        return cls(config.host, name=config.name, fast_paths=config.fast_paths)

    # -- calls ----------------------------------------------------------------------------------
    async def _call(
        self, fn: Callable[[], Awaitable[T]], *, image: str | None = None, attempts: int = 4
    ) -> T:
        """One engine call, retried while the engine is briefly unreachable (see :func:`engine_call`)."""
        return await engine_call(fn, image=image, attempts=attempts)

    def _container(self, sandbox_id: str) -> aiodocker.containers.DockerContainer:
        return self.clients.control.containers.container(sandbox_id)

    # -- the contract ---------------------------------------------------------------------------
    async def ping(self) -> str:
        info = await self._call(self.clients.control.version, attempts=2)
        return str(info.get("Version", "?"))

    async def image(self, ref: str) -> ImageInfo | None:
        try:
            info = await self._call(lambda: self.clients.control.images.inspect(ref))
        except aiodocker.DockerError as exc:
            if exc.status == 404:
                return None
            raise
        config = info.get("Config") or {}
        cmd, entry = config.get("Cmd"), config.get("Entrypoint")
        return ImageInfo(
            ref,
            str(info.get("Id") or ref),
            tuple(cmd) if cmd else None,
            tuple(entry) if entry else None,
            dict(config.get("Labels") or {}),
            tuple(sorted(config.get("Volumes") or {})),
        )

    async def create(self, request: CreateRequest) -> str:
        body = self.adapt(container_body(request), request)
        limit = request.config.disk_limit_bytes
        client = self.clients.control

        async def create() -> str:
            if limit and not self._quota_refused:
                try:
                    return str((await client.containers.create(with_storage_quota(body, limit))).id)
                except aiodocker.DockerError as exc:
                    if not self.refuses_quota(exc):
                        raise
                    self._quota_refused = True  # e.g. overlay2 on ext4: the sandbox's guard caps it
            return str((await client.containers.create(body)).id)

        try:
            return await self._call(create, image=request.image)
        except aiodocker.DockerError as exc:
            if exc.status == 404:
                raise ImageMissing(request.image) from exc
            raise

    def adapt(self, body: dict[str, Any], request: CreateRequest) -> dict[str, Any]:
        """The create body as this engine wants it (Podman's adapter changes it)."""
        return body

    @staticmethod
    def refuses_quota(exc: aiodocker.DockerError) -> bool:
        text = str(exc).lower()
        return "storage-opt" in text or "storage opt" in text

    async def attach(self, sandbox_id: str) -> DockerChannel:
        container = self.clients.streams.containers.container(sandbox_id)
        return await DockerChannel(container.attach(stdin=True, stdout=True, stderr=True)).open()

    async def start(self, sandbox_id: str, *, fast_paths: bool) -> Started:
        container = self._container(sandbox_id)
        await self._call(container.start)
        info = await self._call(container.show)
        host = LocalHost.from_inspect(info) if fast_paths and self.use_fast_paths else None
        capped = bool((info.get("HostConfig") or {}).get("StorageOpt"))
        return Started(str(info.get("Image") or ""), capped, host)

    async def remove(self, sandbox_id: str) -> None:
        container = self._container(sandbox_id)
        try:
            await self._call(lambda: container.delete(force=True, v=True))
        except aiodocker.DockerError as exc:
            if exc.status != 404:
                raise

    async def exec(
        self,
        sandbox_id: str,
        argv: Sequence[str],
        *,
        user: str | None = None,
        workdir: str | None = None,
        env: Mapping[str, str] | None = None,
        stdin: bool = True,
    ) -> DockerChannel:
        container = self._container(sandbox_id)
        made = await self._call(
            lambda: container.exec(
                list(argv),
                stdin=stdin,
                stdout=True,
                stderr=True,
                user=user or "",
                workdir=workdir,
                environment=dict(env) if env else None,
            )
        )
        # The stream rides on the stream client's pool, so that it never holds a control connection.
        stream = aiodocker.execs.Exec(self.clients.streams, made.id, tty=False).start(detach=False)
        return await DockerChannel(stream, made).open()

    async def put_archive(self, sandbox_id: str, path: str, tar_bytes: bytes) -> None:
        container = self._container(sandbox_id)
        await self._call(lambda: container.put_archive(path, tar_bytes))

    async def get_archive(self, sandbox_id: str, path: str) -> bytes:
        container = self._container(sandbox_id)
        try:
            tar = await self._call(lambda: container.get_archive(path))
        except aiodocker.DockerError as exc:
            if exc.status == 404:
                raise FileNotFoundError(f"no such file in the sandbox: {path}") from exc
            raise
        fileobj = tar.fileobj
        assert isinstance(fileobj, io.BytesIO)
        return fileobj.getvalue()

    async def changes(self, sandbox_id: str) -> list[Change]:
        client = self.clients.control
        raw = await self._call(lambda: query_json(client, f"containers/{sandbox_id}/changes"))
        return sorted(Change(item["Path"], _KINDS.get(item["Kind"], "C")) for item in raw or [])

    async def processes(self, sandbox_id: str) -> frozenset[int]:
        client = self.clients.control
        found = await self._call(
            lambda: query_json(client, f"containers/{sandbox_id}/top", {"ps_args": "-o pid"})
        )
        column = found.get("Titles", []).index("PID")
        return frozenset(int(row[column]) for row in found.get("Processes") or [])

    async def inspect(self, sandbox_id: str) -> dict[str, Any]:
        """The engine's own description of a sandbox (``docker inspect``; not part of the contract)."""
        return dict(await self._call(self._container(sandbox_id).show))

    async def running(self, sandbox_id: str) -> bool:
        info = await self._call(self._container(sandbox_id).show)
        return bool((info.get("State") or {}).get("Running"))

    async def disk_usage(self, sandbox_id: str) -> int:
        container = self._container(sandbox_id)
        info = await self._call(lambda: container.show(size=1))
        return int(info.get("SizeRw") or 0)

    async def leftovers(self, labels: Mapping[str, str]) -> list[Leftover]:
        filters = {"label": [f"{k}={v}" for k, v in labels.items()]}
        found = await self._call(lambda: self.clients.control.containers.list(all=True, filters=filters))
        return [Leftover(c.id, dict(c["Labels"] or {})) for c in found]

    # -- without an event loop (the exit hook, the cleanup command) ------------------------------
    def _sync(self) -> Any:
        import docker

        return (
            docker.DockerClient(base_url=self.host, timeout=30) if self.host else docker.from_env(timeout=30)
        )

    def leftovers_now(self, labels: Mapping[str, str]) -> list[Leftover]:
        try:
            client = self._sync()
            found = client.api.containers(
                all=True, filters={"label": [f"{k}={v}" for k, v in labels.items()]}
            )
        except Exception as exc:  # docker-py raises DockerException subclasses on a dead engine
            raise EngineUnavailable(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from exc
        return [Leftover(c["Id"], dict(c.get("Labels") or {})) for c in found]

    def remove_now(self, sandbox_ids: Iterable[str], labels: Mapping[str, str] | None = None) -> int:
        ids = set(sandbox_ids)
        if labels:
            ids |= {c.id for c in self.leftovers_now(labels)}
        if not ids:
            return 0
        client = self._sync()
        removed = 0
        for sandbox_id in ids:
            try:
                client.api.remove_container(sandbox_id, force=True, v=True)
                removed += 1
            except Exception:
                pass
        return removed

    def image_store(self) -> Any:
        from intercode_agents.sandbox.docker.images import DockerImageStore

        return DockerImageStore(self.host)

    async def close(self) -> None:
        await self.clients.close()

"""The Docker (and Podman compat) engine's image store, through docker-py's low-level client."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO

import docker
import docker.errors
import requests

from intercode_agents.errors import EngineUnavailable
from intercode_agents.sandbox.image_store import BuildFailed, ImageStoreError, StoredImage

BUILD_TIMEOUT_S = 3600  # per read of the build stream: a quiet apt step must not time out
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class DockerImageStore:
    def __init__(self, host: str | None, timeout: int = BUILD_TIMEOUT_S) -> None:
        try:
            client = (
                docker.DockerClient(base_url=host, timeout=timeout)
                if host
                else docker.from_env(timeout=timeout)
            )
            self.api = client.api
            self.api.ping()
        except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
            raise EngineUnavailable(str(exc)) from None
        self.host = host

    def inspect(self, ref: str) -> StoredImage | None:
        try:
            info = self.api.inspect_image(ref)
        except docker.errors.ImageNotFound:
            return None
        except requests.exceptions.ConnectionError as exc:
            raise EngineUnavailable(str(exc)) from None
        labels = (info.get("Config") or {}).get("Labels") or {}
        return StoredImage(
            str(info["Id"]), dict(labels), int(info.get("Size") or 0), tuple(info.get("RepoTags") or ())
        )

    def with_label(self, key: str, value: str) -> list[str]:
        return [str(i) for i in self.api.images(filters={"label": f"{key}={value}"}, quiet=True)]

    def tag(self, image_id: str, ref: str) -> None:
        repo, _, tag = ref.rpartition(":")
        self.api.tag(image_id, repo, tag)

    def build(
        self,
        context: Path,
        ref: str,
        *,
        build_args: dict[str, str],
        labels: dict[str, str],
        nocache: bool,
        log: Callable[[str], None],
    ) -> None:
        try:
            stream = self.api.build(
                path=str(context),
                tag=ref,
                buildargs=build_args,
                labels=labels,
                network_mode="host",
                rm=True,
                forcerm=True,
                nocache=nocache,
                pull=False,
                decode=True,
            )
            for chunk in stream:
                for line in _ANSI.sub("", str(chunk.get("stream", ""))).splitlines():
                    if line.strip():
                        log(line)
                if "error" in chunk:
                    raise BuildFailed(str(chunk["error"]).strip())
        except docker.errors.APIError as exc:
            raise BuildFailed(exc.explanation or str(exc)) from None
        except requests.exceptions.RequestException as exc:
            raise EngineUnavailable(f"lost the engine while building {ref!r}: {exc}") from None

    def remove(self, image_id: str) -> None:
        try:
            self.api.remove_image(image_id)
        except docker.errors.APIError as exc:  # in use by a container, or gone already
            raise ImageStoreError(exc.explanation or str(exc)) from None

    def import_tar(self, stream: IO[bytes], ref: str, changes: list[str]) -> None:
        repo, _, tag = ref.rpartition(":")
        try:
            self.api.import_image_from_stream(stream, repository=repo, tag=tag, changes=changes)
        except docker.errors.APIError as exc:
            raise ImageStoreError(exc.explanation or str(exc)) from None

    def pull(self, ref: str, timeout: int) -> str | None:
        client = (
            docker.DockerClient(base_url=self.host, timeout=timeout)
            if self.host
            else docker.from_env(timeout=timeout)
        )
        try:
            for chunk in client.api.pull(ref, stream=True, decode=True):
                if "error" in chunk:
                    return str(chunk["error"]).strip()
        except (docker.errors.APIError, requests.exceptions.RequestException) as exc:
            return (getattr(exc, "explanation", None) or str(exc) or type(exc).__name__).strip()
        finally:
            client.close()
        return None

    def save(self, refs: Iterable[str]) -> Iterator[bytes]:
        # docker-py saves one image a call; the Engine API's ``/images/get?names=...`` saves several
        # with their shared layers once (docker-py's own request helpers, for its session and errors).
        try:
            # (the stubs leave out docker-py's private request helpers)
            url = self.api._url("/images/get")  # type: ignore[attr-defined]
            response = self.api._get(url, params={"names": list(refs)}, stream=True)  # type: ignore[attr-defined]
            self.api._raise_for_status(response)  # type: ignore[attr-defined]
            yield from response.iter_content(chunk_size=1 << 20)
        except docker.errors.APIError as exc:
            raise ImageStoreError(exc.explanation or str(exc)) from None

    def load(self, chunks: Iterable[bytes]) -> None:
        try:
            for _ in self.api.load_image(_Chunks(chunks)):
                pass
        except docker.errors.APIError as exc:
            raise ImageStoreError(exc.explanation or str(exc)) from None

    def close(self) -> None:
        self.api.close()


class _Chunks:
    """An iterable of chunks, for requests' chunked upload (a generator object is consumed once)."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._chunks)

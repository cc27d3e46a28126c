"""What the image builder (``intercode_agents/images``) needs from an engine, synchronously.

A backend that can build images returns one from :meth:`~intercode_agents.sandbox.contract.Backend.
image_store`; the builder never talks to an engine client itself. Engine failures raise
:class:`~intercode_agents.errors.EngineUnavailable`; a failed build :class:`BuildFailed`; other
refusals (an image in use) :class:`ImageStoreError`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Protocol


class ImageStoreError(Exception):
    """The engine refused an image operation (the message says why)."""


class BuildFailed(ImageStoreError):
    """A build step failed; ``reason`` is the engine's message."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class StoredImage:
    id: str
    labels: dict[str, str] = field(default_factory=dict)
    size: int = 0
    tags: tuple[str, ...] = ()


class ImageStore(Protocol):
    def inspect(self, ref: str) -> StoredImage | None:
        """The image ``ref`` names (None: the engine has none)."""

    def with_label(self, key: str, value: str) -> list[str]:
        """IDs of the images labelled ``key=value``."""

    def tag(self, image_id: str, ref: str) -> None: ...

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
        """Build ``context`` as ``ref`` (host networking, no pull), logging each output line."""

    def remove(self, image_id: str) -> None: ...

    def import_tar(self, stream: IO[bytes], ref: str, changes: list[str]) -> None:
        """Make ``ref`` from a root file system tar (``docker import``)."""

    def pull(self, ref: str, timeout: int) -> str | None:
        """Pull ``ref``; None when it worked, else why not (an unreachable registry)."""

    def save(self, refs: Iterable[str]) -> Iterator[bytes]:
        """The images as one ``docker save`` tar stream."""

    def load(self, chunks: Iterable[bytes]) -> None:
        """Load a ``docker save`` tar stream."""

    def close(self) -> None: ...

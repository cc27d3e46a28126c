"""The sandbox backend contract: the little the sandbox layer needs from a container engine.

Everything above a :class:`Backend` (sandboxes, sessions, the launcher, pools, the pristine check,
the envs) is engine-neutral; a backend maps these calls onto its engine:

- start and remove a sandbox (:meth:`Backend.create`, :meth:`~Backend.start`, :meth:`~Backend.remove`);
- open a process with a byte stream both ways (:meth:`~Backend.exec`, and :meth:`~Backend.attach` to
  the main process before it starts): sessions and the launcher ride on the :class:`Channel`;
- copy files in and out (:meth:`~Backend.put_archive`, :meth:`~Backend.get_archive`);
- the change list of the root file system (:meth:`~Backend.changes`, Docker's rules: see
  :mod:`intercode_agents.sandbox.docker.overlay`; an engine with other rules says so, and the sandbox
  layer compares listings instead: :mod:`intercode_agents.sandbox.root_listing`) and the processes
  (:meth:`~Backend.processes`), which with read-only scripts run through :meth:`~Backend.exec` make
  the pristine fingerprint;
- signal a process tree: the sandbox layer runs :data:`~intercode_agents.sandbox.signals.KILL_TREE`
  through :meth:`~Backend.exec`, so a backend needs nothing more for it;
- image identity (:meth:`~Backend.image`);
- clean-up of leftovers by label (:meth:`~Backend.leftovers`, :meth:`~Backend.remove_now`).

A backend may also offer **fast paths** for one sandbox (:class:`HostAccess`, returned by
:meth:`Backend.start`): reading the container's writable layer, process list and files from the
engine's own host instead of through the engine or a script inside the sandbox, and reaching a
helper's unix socket in it (:meth:`HostAccess.connect_unix`). Only the local Docker backend has them;
every answer they give is also given by the slow paths, and the conformance suite
(:mod:`intercode_agents.sandbox.conformance`) checks both against each other and runs on every
backend.

Errors: an engine that cannot be reached raises :class:`~intercode_agents.errors.EngineUnavailable`, a
call past its deadline :class:`~intercode_agents.errors.EngineTimeout`, a missing image
:class:`~intercode_agents.errors.ImageMissing`, a stopped container
:class:`~intercode_agents.errors.SessionDied`. Transient failures are retried inside the backend; an
agent's command never is.
"""

from __future__ import annotations

import socket
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

if TYPE_CHECKING:
    from intercode_agents.sandbox.config import SandboxConfig
    from intercode_agents.sandbox.container_fs import ContainerFiles

ChangeKind = Literal["C", "A", "D"]  # changed, added, deleted
_IDLE_COMMANDS = (("sleep", "infinity"),)


class Change(NamedTuple):
    """One file-system change against the image, by Docker's rules (``docker diff``): an absolute
    path and its kind. Every change list of the project is made of these: a backend's, the fast
    paths', the sandbox's :meth:`~intercode_agents.sandbox.Sandbox.diff`, and the rewards'."""

    path: str
    kind: ChangeKind


@dataclass(frozen=True)
class ImageInfo:
    """An image as the engine knows it."""

    ref: str
    id: str
    command: tuple[str, ...] | None = None
    entrypoint: tuple[str, ...] | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    # The paths the image declares as volumes (Dockerfile VOLUME): the engine mounts a volume of its
    # own at each, outside the container's writable layer.
    volumes: tuple[str, ...] = ()

    @property
    def idles(self) -> bool:
        """Whether the image's command only keeps a container alive (``sleep infinity``, no
        entrypoint): the launcher can then be the container's main process."""
        return not self.entrypoint and self.command in _IDLE_COMMANDS


@dataclass(frozen=True)
class CreateRequest:
    """What to create: ``config``'s isolation and limits, these labels, and (``main_stdin``) a main
    process whose input the sandbox layer writes, through :meth:`Backend.attach`, with ``command``."""

    image: str
    config: SandboxConfig
    labels: Mapping[str, str]
    command: Sequence[str] | None = None
    main_stdin: bool = False


@dataclass
class Started:
    """A started sandbox: its image's ID, whether the engine itself caps its disk (else the sandbox
    layer's guard does), and its fast paths (None: the slow paths serve every question)."""

    image_id: str
    disk_capped: bool
    host: HostAccess | None = None


@dataclass(frozen=True)
class Leftover:
    """A labelled container found on an engine."""

    id: str
    labels: Mapping[str, str]


class Channel(ABC):
    """One process's streams: bytes in, stdout and stderr out (each chunk tagged 1 or 2)."""

    @abstractmethod
    async def write(self, data: bytes) -> None:
        """Send ``data`` to the process's input (SessionDied when the stream is gone)."""

    @abstractmethod
    async def read(self) -> tuple[int, bytes] | None:
        """The next chunk of output as (1 for stdout or 2 for stderr, bytes); None at its end."""

    @abstractmethod
    def close_input(self) -> bool:
        """End the process's input (half-close); False when this channel cannot."""

    @abstractmethod
    async def exit_code(self) -> int | None:
        """The process's exit status, None while it runs (or when the backend cannot tell)."""

    @abstractmethod
    async def close(self) -> None:
        """Let go of the streams (the process may go on)."""


class HostAccess(ABC):
    """Fast paths of one sandbox, read from the engine's own host. Each method may raise
    :class:`HostUnreadable`; the sandbox layer then falls back to the slow path for good."""

    files: ContainerFiles | None = None  # the container's file system, resolved inside its root

    @abstractmethod
    def changes(self) -> list[Change]:
        """The root file system's changes (the same answer as :meth:`Backend.changes`)."""

    @abstractmethod
    def layer_entries(self) -> Any:
        """Every entry of the writable layer, for the pristine fingerprint (stricter than
        :meth:`changes`: a folder whose content changed and changed back still differs)."""

    @abstractmethod
    def usage(self) -> int:
        """Bytes the writable layer takes on the engine's disk."""

    @abstractmethod
    def pids(self) -> frozenset[int]:
        """The container's processes, as host PIDs (the same set :meth:`Backend.processes` names)."""

    @abstractmethod
    def processes(self) -> list[Proc]:
        """The container's processes with their parents and start times, for signals by pidfd."""

    def runtime_listing(self, harness: Sequence[int]) -> str:
        """The pristine fingerprint's runtime channels (what
        :data:`~intercode_agents.sandbox.pristine.RUNTIME_SCRIPT` lists inside the sandbox), read
        from the host; ``harness`` are the container PIDs of the harness's long-lived processes."""
        raise HostUnreadable("this host cannot read the sandbox's runtime state")

    def connect_unix(self, pid: int, path: str) -> socket.socket:
        """A connected, non-blocking stream socket to the unix socket that the sandbox's process
        ``pid`` (its PID in the sandbox) listens on at ``path`` (a path in the sandbox), checked to
        be that process's: a byte stream between the harness and a helper with no engine between."""
        raise HostUnreadable("this host cannot reach the sandbox's sockets")

    def kill_all(self) -> None:
        """Kill every process of the sandbox now, from the host (its removal follows): the
        sandbox stops using CPU and memory at once, and the engine need not kill it."""
        raise HostUnreadable("this host cannot signal the sandbox's processes")

    def close(self) -> None:
        if self.files is not None:
            self.files.close()
            self.files = None


@dataclass(frozen=True)
class Proc:
    """A process of a sandbox as the engine's host sees it (:meth:`HostAccess.processes`)."""

    host_pid: int
    pid: int  # in the container's PID namespace
    host_ppid: int
    start: int  # clock ticks since boot
    state: str


class HostUnreadable(Exception):
    """A fast path cannot answer (any more): use the slow path."""


class Backend(ABC):
    """A container engine the sandboxes run on. One instance per engine and process; it is safe to
    use from several event loops (clients are kept per loop).

    The contract is what a backend must do; where sandboxes go when there are several engines, and
    how healthy each is, the harness decides (:mod:`intercode_agents.sandbox.placement` measures every
    backend's calls from the outside, so a backend keeps no such state).
    """

    # Set by each backend class (a wrapper such as placement's view copies its engine's).
    type: str  # the config's ``type``: "docker", "podman", a third party's
    fast_paths: bool = False  # whether start() may return HostAccess
    # Whether changes() follows Docker's rules; when not, the sandbox layer compares listings of the
    # root file system instead (see :mod:`intercode_agents.sandbox.root_listing`).
    docker_changes: bool = True

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"

    # -- the contract ---------------------------------------------------------------------------
    @abstractmethod
    async def ping(self) -> str:
        """The engine's version; EngineUnavailable (saying how to start it) when it does not answer."""

    @abstractmethod
    async def image(self, ref: str) -> ImageInfo | None:
        """What the engine knows of image ``ref`` (None: it has no such image)."""

    @abstractmethod
    async def create(self, request: CreateRequest) -> str:
        """Create (not start) a sandbox; return its ID. ImageMissing when the image is not there."""

    @abstractmethod
    async def attach(self, sandbox_id: str) -> Channel:
        """The main process's streams of a created sandbox, before it starts (nothing is missed)."""

    @abstractmethod
    async def start(self, sandbox_id: str, *, fast_paths: bool) -> Started:
        """Start a created sandbox; ``fast_paths`` False never returns HostAccess."""

    @abstractmethod
    async def remove(self, sandbox_id: str) -> None:
        """Remove a sandbox and everything it holds, running or not (a missing one is no error)."""

    @abstractmethod
    async def exec(
        self,
        sandbox_id: str,
        argv: Sequence[str],
        *,
        user: str | None = None,
        workdir: str | None = None,
        env: Mapping[str, str] | None = None,
        stdin: bool = True,
    ) -> Channel:
        """Start ``argv`` in the sandbox and return its streams."""

    @abstractmethod
    async def put_archive(self, sandbox_id: str, path: str, tar_bytes: bytes) -> None:
        """Extract a tar archive into the folder ``path``."""

    @abstractmethod
    async def get_archive(self, sandbox_id: str, path: str) -> bytes:
        """A tar archive of ``path`` (FileNotFoundError when it does not exist)."""

    @abstractmethod
    async def changes(self, sandbox_id: str) -> list[Change]:
        """The root file system's changes against the image, Docker's rules (``docker diff``); a
        backend whose engine has other rules sets :attr:`docker_changes` False."""

    @abstractmethod
    async def processes(self, sandbox_id: str) -> frozenset[int]:
        """The PIDs of every process alive in the sandbox, without starting one in it."""

    @abstractmethod
    async def running(self, sandbox_id: str) -> bool:
        """Whether the sandbox's main process still runs."""

    @abstractmethod
    async def disk_usage(self, sandbox_id: str) -> int:
        """Bytes the sandbox's writable layer takes on the engine's disk."""

    @abstractmethod
    async def leftovers(self, labels: Mapping[str, str]) -> list[Leftover]:
        """Every container carrying all of ``labels``, running or not."""

    @abstractmethod
    def remove_now(self, sandbox_ids: Iterable[str], labels: Mapping[str, str] | None = None) -> int:
        """Remove these sandboxes, and those carrying all of ``labels``, without an event loop (the
        exit hook and the ``cleanup`` command call it). Returns how many were removed."""

    def leftovers_now(self, labels: Mapping[str, str]) -> list[Leftover]:
        """:meth:`leftovers` without an event loop."""
        raise NotImplementedError

    def image_store(self) -> Any:
        """The engine's image store for the builder (an
        :class:`~intercode_agents.sandbox.image_store.ImageStore`)."""
        raise NotImplementedError(f"the {self.type} backend cannot build images")

    async def close(self) -> None:  # noqa: B027 - optional: a backend without connections has none
        """Close the running event loop's connections to the engine."""

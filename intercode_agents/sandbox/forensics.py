"""The reading side of a sandbox: what changed, what paths hold, and whether it is still pristine.

Scoring and the pristine contract read a sandbox; they never act on it. :class:`Forensics` holds that
reading side of one :class:`~intercode_agents.sandbox.Sandbox` (``sb.forensics``), apart from its
lifecycle, sessions, commands, signals and files:

- the change list (:meth:`~Forensics.diff`): the root file system by Docker's rules plus the other
  writable mounts, against the sandbox at its start;
- path states (:meth:`~Forensics.path_states`, :mod:`.path_states`) and the contents of a folder
  (:meth:`~Forensics.contents`: kinds and digests, what the task-file measurement reads);
- the pristine fingerprint (:meth:`~Forensics.fingerprint`, :meth:`~Forensics.matches`,
  :mod:`.pristine`), which a pool compares before it lends a sandbox again.

Each question is answered from the backend's fast paths where it has them (read from the engine's
host: nothing in the sandbox takes part), else by the engine's API or a read-only script run inside
the sandbox, believed only while the engine's own change list vouches for the programs it runs
(:mod:`.reader_trust`). The baseline every later answer is compared with is taken as the sandbox
starts (:meth:`~Forensics.note_engine_own`, :meth:`~Forensics.take_baseline`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import AsyncIterator, Sequence
from typing import Any, Literal, Protocol

from intercode_agents.errors import EngineTimeout, EngineUnavailable, SandboxTampered, SessionDied
from intercode_agents.sandbox import mount_changes, root_listing
from intercode_agents.sandbox.container_fs import ContainerFiles, parse_mountinfo
from intercode_agents.sandbox.contract import Backend, Change, HostAccess, HostUnreadable
from intercode_agents.sandbox.mount_changes import Entries as MountEntries
from intercode_agents.sandbox.path_states import (
    Content,
    PathState,
    archive_contents,
    parse_probe_output,
    probe_command,
    read_contents,
    read_states,
)
from intercode_agents.sandbox.pristine import ROOT_SCRIPT, RUNTIME_SCRIPT, Fingerprint
from intercode_agents.sandbox.reader_trust import touched
from intercode_agents.sandbox.result import ExecResult


class Inspected(Protocol):
    """What the reading side needs of its sandbox (a :class:`~intercode_agents.sandbox.Sandbox`)."""

    backend: Backend
    running: bool

    @property
    def id(self) -> str: ...

    @property
    def host_access(self) -> HostAccess | None: ...

    @property
    def launcher_pid(self) -> int: ...

    @property
    def degraded(self) -> bool: ...

    async def exec(
        self, cmd: Sequence[str], *, timeout: float = ..., output_cap: int = ...
    ) -> ExecResult: ...

    async def processes(self) -> frozenset[int]: ...

    async def get_archive(self, path: str) -> bytes: ...


class Forensics:
    """The reading side of one sandbox (see the module docstring)."""

    def __init__(self, sandbox: Inspected) -> None:
        self._sb = sandbox
        self.engine_own: frozenset[Change] = frozenset()  # what the engine itself added at start
        self._root_fresh: root_listing.Listing | None = None  # the baseline where changes() is not Docker's
        self._mount_points: list[str] = []  # the other writable mounts (tmpfs, bind-mounted files)
        self._mounts_fresh: MountEntries = {}

    # -- the baseline, as the sandbox starts ----------------------------------------------------
    async def note_engine_own(self) -> None:
        """Remember what the engine itself adds (the init binary's mount point): no change of ours."""
        self.engine_own = frozenset(await self._changes())

    async def take_baseline(self) -> None:
        """Take what later answers are compared with: the root listing (where the engine's change list
        is not Docker's) and the other writable mounts' entries."""
        if not self._sb.backend.docker_changes:
            self._root_fresh = await self._root_listing()
        self._mount_points = await self._writable_mounts()
        self._mounts_fresh = await self._mount_entries()

    # -- changes --------------------------------------------------------------------------------
    async def diff(self) -> list[Change]:
        """File-system changes since the sandbox started (empty for a pristine sandbox), sorted.

        The root file system as Docker's container-changes API sees it, read from the overlay upper
        directory when the engine's storage is readable here (see :mod:`.overlay`), plus the other
        writable mounts (tmpfs folders, bind-mounted files: see :mod:`.mount_changes`).
        """
        root = [c for c in await self._changes() if c not in self.engine_own]
        others = mount_changes.changes(self._mounts_fresh, await self._mount_entries())
        return sorted({*root, *others})

    async def engine_changes(self) -> list[Change]:
        """The slow path's changes: the engine's API (``docker diff``; slow: it walks both trees), or
        where its rules are not Docker's, the root file system's listing now against the one taken
        at start, compared by Docker's rules (:mod:`.root_listing`)."""
        if self._root_fresh is not None:
            now = await self._root_listing()
            return sorted(root_listing.changes(self._root_fresh, now))
        return sorted(await self._engine_list())

    async def _engine_list(self) -> list[Change]:
        sb = self._sb
        return [Change(path, kind) for path, kind in await sb.backend.changes(sb.id)]

    async def _changes(self) -> list[Change]:
        host = self._sb.host_access
        if host is not None:
            try:
                return await asyncio.to_thread(host.changes)
            except HostUnreadable:
                pass
        return await self.engine_changes()

    async def _writable_mounts(self) -> list[str]:
        if self._files is not None:
            return mount_changes.writable_points(self._files.mounts)
        text = await self._sb.exec(["cat", "/proc/self/mountinfo"], timeout=30)
        return mount_changes.writable_points(parse_mountinfo(text.output)) if text.exit_code == 0 else []

    async def _mount_entries(self) -> MountEntries:
        if not self._mount_points:
            return {}
        if self._files is not None:
            return await asyncio.to_thread(mount_changes.read_entries, self._files, self._mount_points)
        async with self._readers_vouched_for():
            listing = await self._sb.exec(
                ["bash", "-c", mount_changes.MOUNTS_SCRIPT, "mounts", *self._mount_points], timeout=60
            )
        return mount_changes.parse_entries(listing.output)

    async def _root_listing(self) -> root_listing.Listing:
        async with self._readers_vouched_for():
            result = await self._sb.exec(
                ["/bin/sh", "-c", root_listing.LIST_SCRIPT], timeout=120, output_cap=256 << 20
            )
        try:
            if result.exit_code != 0 or result.truncated:
                raise ValueError(result.output[-300:])
            return root_listing.parse_listing(result.output)
        except ValueError as exc:
            raise SessionDied(f"the sandbox's root file system could not be listed: {exc}") from None

    # -- path states ----------------------------------------------------------------------------
    async def path_states(
        self, deep: Sequence[str] = (), shallow: Sequence[str] = ()
    ) -> dict[str, PathState]:
        """What each path holds (see :mod:`.path_states`): ``deep`` folders with a digest of all they
        contain, ``shallow`` ones by their own kind, mode and owner. Read from this host where it can
        be, so that nothing in the sandbox takes part; else by a read-only command inside it."""
        if not deep and not shallow:
            return {}
        if self._files is not None:
            return await asyncio.to_thread(read_states, self._files, deep, shallow)
        async with self._readers_vouched_for():
            result = await self._sb.exec(probe_command(deep, shallow), timeout=120, output_cap=64 << 20)
        return parse_probe_output(result.output)

    # -- where the answers come from ------------------------------------------------------------
    async def contents(self, directory: str, *, max_bytes: int = 64 << 20) -> dict[str, Content] | None:
        """What every entry below the folder ``directory`` holds (its kind and content digest), by
        absolute path; empty when it is no folder, None when its files hold more than ``max_bytes``.
        Read from this host where it can be, else from the engine's archive of the folder: never by a
        program inside the sandbox, so nothing an agent changed there takes part."""
        if self._files is not None:
            return await asyncio.to_thread(read_contents, self._files, directory, max_bytes)
        try:
            data = await self._sb.get_archive(directory)
        except FileNotFoundError:
            return {}
        return archive_contents(data, directory) if len(data) <= max_bytes else None

    @property
    def _files(self) -> ContainerFiles | None:
        """The container's files read from this host (a fast path), or None."""
        host = self._sb.host_access
        return host.files if host is not None else None

    @property
    def reads_from_host(self) -> bool:
        """Whether :meth:`diff`, :meth:`path_states` and the mount listing read from this host."""
        return self._files is not None

    @property
    def diff_source(self) -> Literal["overlay", "engine"]:
        """Where :meth:`diff` reads the changes: the backend's fast path (the overlay upper
        directory), or the engine's API."""
        return "overlay" if self._sb.host_access is not None else "engine"

    @contextlib.asynccontextmanager
    async def _readers_vouched_for(self) -> AsyncIterator[None]:
        """Around a read-only script run inside the sandbox to answer for its files: the engine's
        own change list shows, before and after it, nothing changed among the programs it runs
        (:mod:`.reader_trust`); else :class:`SandboxTampered`."""
        await self._check_readers()
        yield
        await self._check_readers()

    async def _check_readers(self) -> None:
        try:
            found = touched(await self._engine_list())
        except (EngineUnavailable, EngineTimeout, SessionDied):
            raise
        except Exception as exc:  # Podman's list fails once a folder replaced a file: not scored
            raise SessionDied(
                f"the engine would not list the sandbox's changes ({str(exc)[:200]}), so the programs "
                "that would read its files from inside cannot be vouched for"
            ) from exc
        if found:
            shown = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
            raise SandboxTampered(
                f"the sandbox's own programs were changed ({shown}): its files cannot be read from "
                "inside it on this engine",
                self._sb.id,
            )

    # -- pristine state -------------------------------------------------------------------------
    async def fingerprint(self) -> Fingerprint:
        """This sandbox's state on every channel the harness can read (see :mod:`.pristine`). Read
        from the host where the backend's fast paths allow, else it runs one read-only command in
        the sandbox: call it only where the harness alone has worked."""
        sb = self._sb
        files: Any = None
        if sb.host_access is not None:
            try:
                files = await asyncio.to_thread(sb.host_access.layer_entries)
            except HostUnreadable:
                pass
        if files is None:
            root = await sb.exec(["/bin/sh", "-c", ROOT_SCRIPT], timeout=120, output_cap=256 << 20)
            if root.exit_code != 0 or root.truncated:
                raise SessionDied(f"the sandbox's files could not be listed: {root.output[-300:]!r}")
            files = (frozenset(await self.diff()), hashlib.sha256(root.output.encode()).hexdigest())
        return Fingerprint(files, await self._runtime(), await sb.processes())

    async def _runtime(self) -> str:
        """The runtime channels: read from the host where it can (:mod:`.host_runtime`), else by
        :data:`RUNTIME_SCRIPT` in the sandbox."""
        sb = self._sb
        harness = [1, sb.launcher_pid] if sb.launcher_pid else [1]
        if sb.host_access is not None:
            try:
                return "host\n" + await asyncio.to_thread(sb.host_access.runtime_listing, harness)
            except HostUnreadable:
                pass
        listing = await sb.exec(
            ["/bin/sh", "-c", RUNTIME_SCRIPT, "pristine", *map(str, harness)], timeout=60, output_cap=64 << 20
        )
        if listing.exit_code != 0 or listing.truncated:
            raise SessionDied(f"the sandbox's state could not be listed: {listing.output[-300:]!r}")
        return listing.output

    async def matches(self, reference: Fingerprint) -> bool:
        """Whether the sandbox is, on every channel, as it was when ``reference`` was taken: the very
        same processes, the same root file system (where the overlay is readable here, nothing may
        have entered the upper directory since; else Docker's change list must be the same, which
        misses a folder whose content changed and changed back) and the same other mounts, IPC
        objects and host name."""
        sb = self._sb
        if not sb.running or sb.degraded or await sb.processes() != reference.pids:
            return False  # (cheap, and it spares the listing when a process was left behind)
        return await self.fingerprint() == reference

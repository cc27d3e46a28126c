"""A sandbox on any backend: sessions, one-off execs, files and a diff against the image.

The engine is a :class:`~intercode_agents.sandbox.contract.Backend` (the local Docker engine by
default); its optional fast paths (:class:`~intercode_agents.sandbox.contract.HostAccess`) answer where
they can, and the slow paths every backend has answer the same elsewhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import hashlib
import io
import os
import tarfile
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from intercode_agents.errors import (
    ConfigError,
    EngineTimeout,
    EngineUnavailable,
    ImageMissing,
    IntercodeError,
    SandboxTampered,
    SessionDied,
)
from intercode_agents.sandbox import cleanup as registry
from intercode_agents.sandbox import mount_changes, root_listing, signals
from intercode_agents.sandbox.backends import resolve_backend
from intercode_agents.sandbox.config import LABEL, LABEL_PID, LABEL_RUN, RUN_ID, SandboxConfig
from intercode_agents.sandbox.container_fs import ContainerFiles, parse_mountinfo
from intercode_agents.sandbox.contract import (
    Backend,
    ChangeKind,
    CreateRequest,
    HostAccess,
    HostUnreadable,
    ImageInfo,
)
from intercode_agents.sandbox.disk_guard import ENGINE_POLL_S, DiskGuard
from intercode_agents.sandbox.json_session import JsonSession
from intercode_agents.sandbox.launcher import MAIN_COMMAND, Launcher
from intercode_agents.sandbox.main_process import MainProcess, find_main
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
from intercode_agents.sandbox.placement import EngineSet
from intercode_agents.sandbox.pristine import ROOT_SCRIPT, RUNTIME_SCRIPT, Fingerprint
from intercode_agents.sandbox.reader_trust import touched
from intercode_agents.sandbox.result import DEFAULT_OUTPUT_CAP, ExecResult, OutputCapture
from intercode_agents.sandbox.shell import ShellSession
from intercode_agents.sandbox.stream import KILL_TREE, ProcessStream

BackendChoice = Backend | EngineSet | Mapping[str, Any] | str | None


@dataclass(frozen=True, order=True)
class Change:
    """One file-system change against the image (Docker's container-changes API)."""

    path: str
    kind: ChangeKind  # C(hanged), A(dded), D(eleted)


# Seconds between tries of a helper the sandbox's full process table keeps from starting (~8 s).
HELPER_RETRY_WAITS = (0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.5, 2.0, 2.0)
# The longest a container whose main process is doomed may take to stop (the kernel ends it at once;
# this bounds only the engine noticing it).
MAIN_LOST_STOP_S = 30.0


class Sandbox:
    """One isolated container. ``async with Sandbox(image) as sb:`` starts it and always removes it.

    ``backend`` is the engine it runs on: a :class:`~intercode_agents.sandbox.contract.Backend`, a
    config or engine string (see :mod:`intercode_agents.sandbox.backends`), or an
    :class:`~intercode_agents.sandbox.placement.EngineSet`, which places it on the engine with the
    most free capacity when it starts; None is the default backend. Keyword overrides of
    :class:`SandboxConfig` fields (``memory="512m"``, ``pids_limit=128``, ``network_mode=...``) may
    be passed directly.
    """

    def __init__(
        self,
        image: str,
        *,
        backend: BackendChoice = None,
        config: SandboxConfig | None = None,
        **overrides: Any,
    ) -> None:
        config = dataclasses.replace(config or SandboxConfig())
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
        self.image = image
        self.config = config
        self._placement = backend if isinstance(backend, EngineSet) else None
        self.backend: Backend = self._placement.first if self._placement else resolve_backend(backend)
        self.image_id: str | None = None
        self._id: str | None = None
        self._sessions: list[ShellSession | JsonSession] = []
        self._engine_changes: frozenset[Change] = frozenset()
        self._root_fresh: root_listing.Listing | None = None  # the baseline where changes() is not Docker's
        self._host: HostAccess | None = None  # the backend's fast paths, when it has them here
        self._launcher: Launcher | None = None  # starts sessions without a docker exec each
        self._main: MainProcess | None = None  # the process whose death stops the container, if known
        self.disk_guard: DiskGuard | None = None  # when the engine cannot cap the writable layer
        self.untrusted = False  # lent to untrusted code (an agent): never lent again, never runs a gold
        self._mount_points: list[str] = []  # its other writable mounts (tmpfs, bind-mounted files)
        self._mounts_fresh: MountEntries = {}
        self.running = False

    # -- lifecycle -----------------------------------------------------------------------------
    @property
    def id(self) -> str:
        if self._id is None:
            raise SessionDied("the sandbox is not started")
        return self._id

    async def start(self) -> Sandbox:
        if self._placement is not None:
            self.backend = self._placement.choose()
        backend = self.backend
        info = await _image_info(backend, self.image)
        # When the image's command only keeps the container alive, the launcher takes its place.
        main_launcher = self.config.launcher and self.config.cmd is None and info.idles
        labels = {LABEL: "1", LABEL_RUN: RUN_ID, LABEL_PID: str(os.getpid()), **self.config.labels}
        request = CreateRequest(
            self.image, self.config, labels, MAIN_COMMAND if main_launcher else None, main_launcher
        )
        registry.creating(backend)
        create = asyncio.ensure_future(backend.create(request))
        try:
            sandbox_id = await asyncio.shield(create)
        except asyncio.CancelledError:
            # The engine may still create it: remove it once it exists, then honour the cancel.
            create.add_done_callback(functools.partial(_remove_when_created, backend))
            raise
        self._id = sandbox_id
        registry.register(backend, sandbox_id)
        attached = ProcessStream(backend, sandbox_id, MAIN_COMMAND) if main_launcher else None
        try:
            if attached is not None:
                await attached.attach()
            started = await backend.start(sandbox_id, fast_paths=self.config.diff_source == "auto")
            self.running = True
            self.image_id = started.image_id or info.id
            self._host = started.host
            # What the engine itself adds (the init binary's mount point) is not a change of ours.
            if backend.docker_changes:
                self._engine_changes = frozenset(await self._changes())
            if attached is not None:
                self._launcher = await Launcher(backend, sandbox_id).start(attached)
            elif self.config.launcher:
                self._launcher = await _started_launcher(backend, sandbox_id)
            self._main = self._find_main()
            if not backend.docker_changes:
                self._root_fresh = await self._root_listing()  # (through the launcher: faster)
            self._mount_points = await self._writable_mounts()
            self._mounts_fresh = await self._mount_entries()
            limit = self.config.disk_limit_bytes
            if limit and not started.disk_capped:
                self.disk_guard = DiskGuard(limit, self.disk_usage, self.stop_everything)
                if self._host is None:
                    self.disk_guard.interval = ENGINE_POLL_S
                self.disk_guard.start()
        except BaseException:
            if attached is not None and self._launcher is None:
                await attached.close()  # the launcher never took the stream over
            await self.close()
            raise
        return self

    async def close(self) -> None:
        """Remove the container (idempotent; safe during cancellation)."""
        sandbox_id, self._id = self._id, None
        self.running = False
        if sandbox_id is None:
            return
        self._id = sandbox_id  # sessions need it to stop their processes
        if self.disk_guard is not None:
            await self.disk_guard.close()
        host, self._host = self._host, None
        await self.close_sessions()
        if host is not None:
            host.close()
        if self._launcher is not None:
            await self._launcher.close()
        self._id = None
        # Shielded, and forgotten only once removed: if the caller is cancelled meanwhile, the
        # removal goes on, and if the process ends first the exit hook still knows the container.
        await asyncio.shield(_remove(self.backend, sandbox_id))

    async def __aenter__(self) -> Sandbox:
        return await self.start()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # -- sessions ------------------------------------------------------------------------------
    async def shell(
        self,
        *,
        user: str | None = None,
        workdir: str | None = None,
        env: dict[str, str] | None = None,
        output_cap: int = DEFAULT_OUTPUT_CAP,
    ) -> ShellSession:
        """A new persistent bash session in this sandbox."""
        session = ShellSession(self, user=user, workdir=workdir, env=env, output_cap=output_cap)
        await session.start()
        self._sessions.append(session)
        return session

    async def json_session(self, argv: Sequence[str], **kwargs: Any) -> JsonSession:
        """A new JSON-lines helper process (see :class:`JsonSession`)."""
        session = JsonSession(self, argv, **kwargs)
        await session.start()
        self._sessions.append(session)
        return session

    async def start_process(
        self,
        argv: Sequence[str],
        *,
        user: str | None = None,
        workdir: str | None = None,
        env: dict[str, str] | None = None,
        goodbye: bytes,
        one_off: bool = False,
    ) -> ProcessStream:
        """Start a process: through the launcher when it is free (``goodbye`` is the input that makes
        the program exit), else by a docker exec of its own (it exits at end of input). A
        ``one_off`` process gets no input and has its errors folded into its output."""
        if self._launcher is not None and self._launcher.idle and user is None:
            return await self._launcher.spawn(
                argv, workdir=workdir, env=env, goodbye=goodbye, one_off=one_off
            )
        proc = ProcessStream(
            self.backend, self.id, argv, user=user, workdir=workdir, env=env, stdin=not one_off
        )
        await proc.start()
        return proc

    @property
    def degraded(self) -> bool:
        """The sandbox lost a process it started for itself (an agent killed its launcher, say)."""
        return self._launcher is not None and not self._launcher.alive

    async def close_sessions(self) -> None:
        """End every session started in this sandbox (their processes are killed)."""
        sessions, self._sessions = self._sessions, []
        for session in sessions:
            await _quietly(session.close())

    async def forget(self, session: ShellSession | JsonSession) -> None:
        """Close a session and stop tracking it."""
        if session in self._sessions:
            self._sessions.remove(session)
        await session.close()

    # -- one-off commands --------------------------------------------------------------------
    async def exec(
        self,
        cmd: str | Sequence[str],
        *,
        timeout: float = 30.0,
        user: str | None = None,
        workdir: str | None = None,
        env: dict[str, str] | None = None,
        output_cap: int = DEFAULT_OUTPUT_CAP,
    ) -> ExecResult:
        """Run one command (a string goes through ``sh -c``); stdin is closed, errors are folded into
        the output. It starts through the launcher when that is free, else by a docker exec."""
        argv = ["/bin/sh", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        started = time.perf_counter()
        proc = await self.start_process(argv, user=user, workdir=workdir, env=env, goodbye=b"", one_off=True)
        capture = OutputCapture(output_cap)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        timed_out = False
        stderr_seen = len(proc.stderr_tail)
        try:
            while True:
                remaining = deadline - loop.time()
                if remaining <= 0 and not timed_out:
                    timed_out = True
                    await self.signal_tree(proc.pid, "KILL", include_root=True, since="root")
                    deadline = loop.time() + 5.0
                    continue
                try:
                    chunk = await proc.read(max(remaining, 0.001))
                except TimeoutError:
                    if timed_out:
                        break
                    continue
                # stderr arrives on its own channel; fold it in as it comes
                if len(proc.stderr_tail) != stderr_seen:
                    capture.feed(bytes(proc.stderr_tail[stderr_seen:]))
                    stderr_seen = len(proc.stderr_tail)
                if chunk is None:
                    break
                capture.feed(chunk)
            code = await proc.exit_code()
        finally:
            await proc.close()
        return ExecResult(
            output=capture.text(),
            exit_code=-1 if timed_out or code is None else code,
            timed_out=timed_out,
            truncated=capture.truncated,
            duration_s=time.perf_counter() - started,
            output_bytes=capture.total,
        )

    async def signal_tree(self, pid: int, sig: str, *, include_root: bool, since: str | None = None) -> None:
        """Send ``sig`` to every descendant of ``pid`` (and to ``pid`` itself if asked) or, with
        ``since``, to every process started since then instead, whoever its parent: that includes
        what a command ``setsid``, ``nohup`` or double-forked away from its tree, and spares what
        earlier commands left running. ``since`` is ``"CS:PIDS"`` (the container's uptime in
        hundredths of a second when the command began, and the PIDs alive then) or ``"root"`` (when
        ``pid`` itself began). The harness's own processes (the init, the launcher, the other sessions
        and what they run) are always spared. From the engine's host where it can (nothing needs to
        start in the sandbox, whose process table may be full), else by a script run inside it."""
        if not pid:
            return
        others = [s.pid for s in self._sessions if s.pid and s.pid != pid]
        await self._signal(str(pid), sig, include_root=include_root, since=since, sessions=others)

    async def stop_everything(self) -> None:
        """Kill every process in the sandbox but its init and the launcher (sessions included)."""
        await self._signal("0", "KILL", include_root=False, since="0:", sessions=[])

    async def _signal(
        self, root: str, sig: str, *, include_root: bool, since: str | None, sessions: list[int]
    ) -> None:
        launcher = self._launcher.stream.pid if self._launcher and self._launcher.stream else 0
        if self._host is not None:
            try:
                procs = self._host.processes()
            except HostUnreadable:
                pass
            else:
                chosen = signals.victims(
                    procs, root=int(root), include_root=include_root, since=since, alone=[launcher],
                    sessions=sessions,
                )  # fmt: skip
                await signals.send(chosen, sig)
                return
        argv = ["/bin/sh", "-c", KILL_TREE, "kill-tree", root, sig, "1" if include_root else "0"]
        window = "-1" if since is None else since
        argv += [window, str(launcher), *map(str, sessions)]
        proc = await self._start_helper(argv)
        try:
            while await proc.read(10.0) is not None:
                pass
        finally:
            await proc.close()

    async def _start_helper(self, argv: list[str]) -> ProcessStream:
        """Start a harness helper in the sandbox, retrying while it cannot: a fork bomb that fills
        the sandbox's process table makes the runtime fail the exec ("read init-p: connection reset")
        until one of the bomb's processes exits, which under a pids limit they keep doing."""
        for wait in HELPER_RETRY_WAITS:
            proc = ProcessStream(self.backend, self.id, argv, stdin=False)
            try:
                await proc.start()
                return proc
            except SessionDied:
                await proc.close()
                if not await self.backend.running(self.id):
                    raise
                await asyncio.sleep(wait)
        proc = ProcessStream(self.backend, self.id, argv, stdin=False)
        await proc.start()  # the last try: its failure is the caller's
        return proc

    async def responds(self, timeout: float = 10.0) -> bool:
        """Whether the container still runs and can run a command now (False, never an error, when it
        cannot). The engine itself failing still raises."""
        if self._id is None:
            return False
        if not await self.backend.running(self._id):
            return False
        try:
            return (await self.exec(["true"], timeout=timeout)).exit_code == 0
        except SessionDied:
            return False

    async def disk_usage(self) -> int:
        """Bytes the sandbox's writable layer takes on the engine's disk."""
        if self._host is not None:
            try:
                return await asyncio.to_thread(self._host.usage)
            except HostUnreadable:
                pass
        return await self.backend.disk_usage(self.id)

    def _find_main(self) -> MainProcess | None:
        """The container's main process: the launcher when it is that process, else (where this host
        sees the processes) the init's first child; None when it cannot be told."""
        launcher = self._launcher
        known = launcher.stream.pid if launcher and launcher.main and launcher.stream else None
        procs: list[signals.Proc] = []
        if self._host is not None:
            with contextlib.suppress(HostUnreadable):
                procs = self._host.processes()
        found = find_main(procs, known)
        if found is not None:
            return MainProcess(found.pid, found)
        return MainProcess(known) if known else None

    @property
    def main_pid(self) -> int | None:
        """The PID, inside the container, of the process whose death stops the container (None: not
        known, or the init itself)."""
        return self._main.pid if self._main is not None else None

    async def after_command(self, *, main_doomed: bool = False) -> None:
        """Called when a command (a session step, a helper request) ends.

        When the container's main process is doomed (``main_doomed``: the shell session saw it; or
        this host sees it), the container is about to stop: wait for it and raise SessionDied, so the
        command always ends so (see :mod:`.main_process`). Then the disk cap is checked at once, so
        that a command which wrote past it gets the notice in its own observation."""
        if self._main is not None and self.running:
            if self._main.host is not None:
                main_doomed = self._main.doomed_on_host()  # (this host's reading is the surer one)
            if main_doomed:
                await self._main_lost()
        if self.disk_guard is not None and self.running:
            try:
                await self.disk_guard.check()
            except Exception:  # the container is going away
                pass

    async def _main_lost(self) -> None:
        """The main process is doomed: wait until the container stopped, then say so."""
        for _ in range(int(MAIN_LOST_STOP_S / 0.02)):  # (the engine has no event for it we could await)
            if not await self.backend.running(self.id):
                break
            await asyncio.sleep(0.02)
        raise SessionDied(
            "the sandbox's main process was killed from inside it, so its container has stopped"
        )

    @property
    def stops(self) -> int:
        """How many times the harness stopped every process here (sessions restart when it grows)."""
        return self.disk_guard.stops if self.disk_guard else 0

    def take_notice(self) -> str | None:
        """A message for the agent about something the harness did to the sandbox (the disk cap
        stopped its processes), once."""
        return self.disk_guard.take_notice() if self.disk_guard else None

    # -- files -------------------------------------------------------------------------------
    async def write_file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        """Create or replace one file (parent folders must exist)."""
        target = Path(path)
        if not target.is_absolute():
            raise ConfigError(f"sandbox paths must be absolute: {path!r}")
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            info = tarfile.TarInfo(target.name)
            info.size, info.mode, info.mtime = len(data), mode, int(time.time())
            tar.addfile(info, io.BytesIO(data))
        await self.put_archive(str(target.parent), buf.getvalue())

    async def put_archive(self, path: str, tar_bytes: bytes) -> None:
        """Extract a tar archive into ``path`` inside the container."""
        await self.backend.put_archive(self.id, path, tar_bytes)

    async def get_archive(self, path: str) -> bytes:
        """``path`` inside the container as a tar archive (FileNotFoundError when it does not exist)."""
        return await self.backend.get_archive(self.id, path)

    async def copy_in(self, sources: Sequence[tuple[Path, str]], dest_dir: str) -> None:
        """Copy host files into ``dest_dir``; each source is (host path, relative name in dest)."""
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for host_path, arcname in sources:
                tar.add(str(host_path), arcname=arcname, recursive=False)
        await self.exec(["mkdir", "-p", dest_dir])
        await self.put_archive(dest_dir, buf.getvalue())

    async def read_file(self, path: str, max_bytes: int = 64 << 20) -> bytes:
        """Read one regular file from the container."""
        data = await self.backend.get_archive(self.id, path)
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            member = next((m for m in tar.getmembers() if m.isfile()), None)
            if member is None:
                raise IsADirectoryError(f"not a regular file in the sandbox: {path}")
            if member.size > max_bytes:
                raise IntercodeError(f"{path} is {member.size} bytes, over the {max_bytes}-byte read limit")
            fh = tar.extractfile(member)
            assert fh is not None
            return fh.read()

    async def diff(self) -> list[Change]:
        """File-system changes since the sandbox started (empty for a pristine sandbox), sorted.

        The root file system as Docker's container-changes API sees it, read from the overlay upper
        directory when the engine's storage is readable here (see :mod:`.overlay`), plus the other
        writable mounts (tmpfs folders, bind-mounted files: see :mod:`.mount_changes`).
        """
        root = [c for c in await self._changes() if c not in self._engine_changes]
        others = mount_changes.changes(self._mounts_fresh, await self._mount_entries())
        return sorted({*root, *(Change(p, k) for p, k in others)})  # type: ignore[arg-type]

    async def _writable_mounts(self) -> list[str]:
        if self._files is not None:
            return mount_changes.writable_points(self._files.mounts)
        text = await self.exec(["cat", "/proc/self/mountinfo"], timeout=30)
        return mount_changes.writable_points(parse_mountinfo(text.output)) if text.exit_code == 0 else []

    async def _mount_entries(self) -> MountEntries:
        if not self._mount_points:
            return {}
        if self._files is not None:
            return await asyncio.to_thread(mount_changes.read_entries, self._files, self._mount_points)
        async with self._inside_tools_vouched_for():
            listing = await self.exec(
                ["bash", "-c", mount_changes.MOUNTS_SCRIPT, "mounts", *self._mount_points], timeout=60
            )
        return mount_changes.parse_entries(listing.output)

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
        async with self._inside_tools_vouched_for():
            result = await self.exec(probe_command(deep, shallow), timeout=120, output_cap=64 << 20)
        return parse_probe_output(result.output)

    async def contents(self, directory: str, *, max_bytes: int = 64 << 20) -> dict[str, Content] | None:
        """What every entry below the folder ``directory`` holds (its kind and content digest), by
        absolute path; empty when it is no folder, None when its files hold more than ``max_bytes``.
        Read from this host where it can be, else from the engine's archive of the folder: never by a
        program inside the sandbox, so nothing an agent changed there takes part."""
        if self._files is not None:
            return await asyncio.to_thread(read_contents, self._files, directory, max_bytes)
        try:
            data = await self.get_archive(directory)
        except FileNotFoundError:
            return {}
        return archive_contents(data, directory) if len(data) <= max_bytes else None

    @property
    def _files(self) -> ContainerFiles | None:
        """The container's files read from this host (a fast path), or None."""
        return self._host.files if self._host is not None else None

    @property
    def reads_from_host(self) -> bool:
        """Whether :meth:`diff`, :meth:`path_states` and the mount listing read from this host."""
        return self._files is not None

    @property
    def diff_source(self) -> Literal["overlay", "engine"]:
        """Where :meth:`diff` reads the changes: the backend's fast path (the overlay upper
        directory), or the engine's API."""
        return "overlay" if self._host is not None else "engine"

    @contextlib.contextmanager
    def slow_paths(self) -> Iterator[None]:
        """Answer every question through the slow paths while inside (the conformance suite checks
        that they give what the fast paths give)."""
        host, self._host = self._host, None
        try:
            yield
        finally:
            self._host = host

    async def _changes(self) -> list[Change]:
        if self._host is not None:
            try:
                found = await asyncio.to_thread(self._host.changes)
                return [Change(path, kind) for path, kind in found]
            except HostUnreadable:
                pass
        return await self.engine_changes()

    async def engine_changes(self) -> list[Change]:
        """The slow path's changes: the engine's API (``docker diff``; slow: it walks both trees), or
        where its rules are not Docker's, the root file system's listing now against the one taken
        at start, compared by Docker's rules (:mod:`.root_listing`)."""
        if self._root_fresh is not None:
            now = await self._root_listing()
            return sorted(Change(p, k) for p, k in root_listing.changes(self._root_fresh, now))
        return sorted(Change(path, kind) for path, kind in await self.backend.changes(self.id))

    async def _root_listing(self) -> root_listing.Listing:
        async with self._inside_tools_vouched_for():
            result = await self.exec(
                ["/bin/sh", "-c", root_listing.LIST_SCRIPT], timeout=120, output_cap=256 << 20
            )
        try:
            if result.exit_code != 0 or result.truncated:
                raise ValueError(result.output[-300:])
            return root_listing.parse_listing(result.output)
        except ValueError as exc:
            raise SessionDied(f"the sandbox's root file system could not be listed: {exc}") from None

    @contextlib.asynccontextmanager
    async def _inside_tools_vouched_for(self) -> AsyncIterator[None]:
        """Around a read-only script run inside the sandbox to answer for its files: the engine's
        own change list shows, before and after it, nothing changed among the programs it runs
        (:mod:`.inside_tools`); else :class:`SandboxTampered`."""
        await self._check_inside_tools()
        yield
        await self._check_inside_tools()

    async def _check_inside_tools(self) -> None:
        try:
            found = touched(await self.backend.changes(self.id))
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
                self.id,
            )

    async def processes(self) -> frozenset[int]:
        """The PIDs (as the engine's host sees them) of every process alive in the container: from
        the backend's fast path (its cgroup) where it can, else from the engine's API. No process
        is started inside the sandbox to list them."""
        if self._host is not None:
            try:
                return self._host.pids()
            except HostUnreadable:
                pass
        return await self.backend.processes(self.id)

    # -- pristine state ----------------------------------------------------------------------
    async def fingerprint(self) -> Fingerprint:
        """This sandbox's state on every channel the harness can read (see :mod:`.pristine`). It
        runs one read-only command in the sandbox: call it only where the harness alone has worked."""
        files: Any = None
        if self._host is not None:
            try:
                files = await asyncio.to_thread(self._host.layer_entries)
            except HostUnreadable:
                pass
        if files is None:
            root = await self.exec(["/bin/sh", "-c", ROOT_SCRIPT], timeout=120, output_cap=256 << 20)
            if root.exit_code != 0 or root.truncated:
                raise SessionDied(f"the sandbox's files could not be listed: {root.output[-300:]!r}")
            files = (frozenset(await self.diff()), hashlib.sha256(root.output.encode()).hexdigest())
        launcher = self._launcher.stream.pid if self._launcher and self._launcher.stream else 0
        harness = ["1", str(launcher)] if launcher else ["1"]
        listing = await self.exec(
            ["/bin/sh", "-c", RUNTIME_SCRIPT, "pristine", *harness], timeout=60, output_cap=64 << 20
        )
        if listing.exit_code != 0 or listing.truncated:
            raise SessionDied(f"the sandbox's state could not be listed: {listing.output[-300:]!r}")
        return Fingerprint(files, listing.output, await self.processes())

    async def matches(self, reference: Fingerprint) -> bool:
        """Whether the sandbox is, on every channel, as it was when ``reference`` was taken: the very
        same processes, the same root file system (where the overlay is readable here, nothing may
        have entered the upper directory since; else Docker's change list must be the same, which
        misses a folder whose content changed and changed back) and the same other mounts, IPC
        objects and host name."""
        if not self.running or self.degraded or await self.processes() != reference.pids:
            return False  # (cheap, and it spares the listing when a process was left behind)
        return await self.fingerprint() == reference

    async def end_process(self, proc: ProcessStream, *, busy: bool) -> None:
        """Stop a session's process: an idle one is asked to exit by closing its input, a busy one
        (or one that does not exit within a second) has its process tree killed."""
        try:
            if self.running and not proc.eof and (busy or not await proc.end(grace=1.0)):
                await self.kill_process(proc)
        except Exception:  # the container may be going away
            pass
        finally:
            await proc.close()

    async def kill_process(self, proc: ProcessStream, *, since: str | None = None) -> None:
        """Kill a session's process tree (and what was started since ``since``, see
        :meth:`signal_tree`) and wait (two seconds at most) until its output ends: a launched one
        then gives the launcher its stream back."""
        await self.signal_tree(proc.pid, "KILL", include_root=True, since=since)
        await proc.drain(2.0)


_image_infos: dict[tuple[int, str], ImageInfo] = {}


async def _image_info(backend: Backend, image: str) -> ImageInfo:
    """What ``backend`` knows of ``image`` (kept for the process: its command decides the launcher)."""
    key = (id(backend), image)
    if key not in _image_infos:
        info = await backend.image(image)
        if info is None:
            raise ImageMissing(image)
        _image_infos[key] = info
    return _image_infos[key]


async def _started_launcher(backend: Backend, sandbox_id: str) -> Launcher | None:
    """A running launcher, or None when the image cannot run one (no bash): sessions then start
    by docker exec."""
    launcher = Launcher(backend, sandbox_id)
    try:
        return await launcher.start()
    except SessionDied:
        await launcher.close()
        return None


_removals: set[asyncio.Task[None]] = set()


def _remove_when_created(backend: Backend, create: asyncio.Future[str]) -> None:
    """Remove the sandbox of a create whose caller was cancelled (registered meanwhile, so the
    exit hook removes it if the loop ends first)."""
    if create.cancelled() or create.exception() is not None:
        return
    sandbox_id = create.result()
    registry.register(backend, sandbox_id)
    task = asyncio.get_running_loop().create_task(_remove(backend, sandbox_id))
    _removals.add(task)
    task.add_done_callback(_removals.discard)


async def _remove(backend: Backend, sandbox_id: str) -> None:
    await backend.remove(sandbox_id)
    registry.unregister(backend, sandbox_id)


async def _quietly(coro: Any) -> None:
    try:
        await coro
    except Exception:
        pass

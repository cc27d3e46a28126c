"""A sandbox on any backend: its lifecycle, sessions, one-off execs, signals and files.

The engine is a :class:`~intercode_agents.sandbox.contract.Backend` (the local Docker engine by
default); its optional fast paths (:class:`~intercode_agents.sandbox.contract.HostAccess`) answer where
they can, and the slow paths every backend has answer the same elsewhere. What scoring and the
pristine contract read (changes, path states, the fingerprint) is the sandbox's reading side,
``sb.forensics`` (:mod:`.forensics`); :meth:`Sandbox.diff` and :meth:`Sandbox.path_states`, the two
questions every user asks of a sandbox, answer through it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from intercode_agents.errors import ConfigError, ImageMissing, SessionDied
from intercode_agents.sandbox import archives, cleanup, signals
from intercode_agents.sandbox.backends import resolve_backend
from intercode_agents.sandbox.config import LABEL, LABEL_PID, LABEL_RUN, RUN_ID, SandboxConfig
from intercode_agents.sandbox.contract import (
    Backend,
    Change,
    CreateRequest,
    HostAccess,
    HostUnreadable,
    ImageInfo,
)
from intercode_agents.sandbox.disk_guard import ENGINE_POLL_S, DiskGuard
from intercode_agents.sandbox.engine_gate import REMOVAL, gate_of
from intercode_agents.sandbox.forensics import Forensics
from intercode_agents.sandbox.json_session import JsonSession
from intercode_agents.sandbox.launcher import MAIN_COMMAND, Launcher
from intercode_agents.sandbox.main_process import MainProcess, find_main
from intercode_agents.sandbox.path_states import PathState
from intercode_agents.sandbox.placement import EngineSet
from intercode_agents.sandbox.result import DEFAULT_OUTPUT_CAP, ExecResult, OutputCapture
from intercode_agents.sandbox.shell import ShellSession
from intercode_agents.sandbox.stream import ProcessStream

BackendChoice = Backend | EngineSet | Mapping[str, Any] | str | None


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
        self.image = image
        self.config = (config or SandboxConfig()).with_overrides(**overrides)
        self._placement = backend if isinstance(backend, EngineSet) else None
        self.backend: Backend = backend.first if isinstance(backend, EngineSet) else resolve_backend(backend)
        self.image_id: str | None = None
        self._id: str | None = None
        self._sessions: list[ShellSession | JsonSession] = []
        self._host: HostAccess | None = None  # the backend's fast paths, when it has them here
        self._launcher: Launcher | None = None  # starts sessions without a docker exec each
        self._main: MainProcess | None = None  # the process whose death stops the container, if known
        self.disk_guard: DiskGuard | None = None  # when the engine cannot cap the writable layer
        self._not_stopping = asyncio.Event()  # clear while stop_everything runs
        self._not_stopping.set()
        self.untrusted = False  # lent to untrusted code (an agent): never lent again, never runs a gold
        self.forensics = Forensics(self)  # the reading side: changes, path states, the fingerprint
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
        _check_volumes(self.image, info, self.config)
        # When the image's command only keeps the container alive, the launcher takes its place.
        main_launcher = self.config.launcher and self.config.cmd is None and info.idles
        labels = {LABEL: "1", LABEL_RUN: RUN_ID, LABEL_PID: str(os.getpid()), **self.config.labels}
        request = CreateRequest(
            self.image, self.config, labels, MAIN_COMMAND if main_launcher else None, main_launcher
        )
        cleanup.creating(backend)
        create = asyncio.ensure_future(backend.create(request))
        try:
            sandbox_id = await asyncio.shield(create)
        except asyncio.CancelledError:
            # The engine may still create it: remove it once it exists, then honour the cancel.
            create.add_done_callback(functools.partial(cleanup.remove_when_created, backend))
            raise
        self._id = sandbox_id
        cleanup.register(backend, sandbox_id)
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
                await self.forensics.note_engine_own()
            if attached is not None:
                self._launcher = await Launcher(backend, sandbox_id).start(attached)
            elif self.config.launcher:
                self._launcher = await Launcher.start_if_possible(backend, sandbox_id)
            self._main = self._find_main()
            await self.forensics.take_baseline()  # (after the launcher: its listings are faster)
            limit = self.config.disk_limit_bytes
            if limit and not started.disk_capped:  # (it watches from the first process on)
                self.disk_guard = DiskGuard(limit, self.disk_usage, self.stop_everything)
                if self._host is None:
                    self.disk_guard.interval = ENGINE_POLL_S
        except BaseException:
            if attached is not None and self._launcher is None:
                await attached.close()  # the launcher never took the stream over
            await self.close()
            raise
        return self

    async def close(self) -> None:
        """Remove the container (idempotent; safe during cancellation). Where the engine's host can
        signal its processes, they are killed at once; the removal then waits its turn at the
        engine's gate (:mod:`.engine_gate`), behind the starts episodes wait for."""
        sandbox_id, self._id = self._id, None
        self.running = False
        if sandbox_id is None:
            return
        self._id = sandbox_id  # sessions need it to stop their processes
        if self.disk_guard is not None:
            await self.disk_guard.close()
        host, self._host = self._host, None
        if host is not None:
            with contextlib.suppress(HostUnreadable):
                host.kill_all()  # nothing runs on, and the sessions' streams end at once
        await self.close_sessions()
        if host is not None:
            host.close()
        if self._launcher is not None:
            await self._launcher.close()
        self._id = None
        # Shielded, and forgotten only once removed: if the caller is cancelled meanwhile, the
        # removal goes on, and if the process ends first the exit hook still knows the container.
        await asyncio.shield(self._remove(sandbox_id))

    async def _remove(self, sandbox_id: str) -> None:
        async with gate_of(self.backend).slot(REMOVAL):
            await cleanup.remove(self.backend, sandbox_id)

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
        if self.disk_guard is not None and not self.disk_guard.watching:
            self.disk_guard.start()  # (nothing could write before a process ran)
        await self._not_stopping.wait()  # (a stop under way would kill what starts meanwhile)
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
    def launcher_pid(self) -> int:
        """The launcher's PID in the sandbox (0: it has none): a process the harness spares."""
        return self._launcher.stream.pid if self._launcher and self._launcher.stream else 0

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
        """Kill every process in the sandbox but its init and the launcher (sessions included). No
        process starts until it is done: its next listing would find it, maybe half started."""
        self._not_stopping.clear()
        try:
            await self._signal("0", "KILL", include_root=False, since="0:", sessions=[])
        finally:
            self._not_stopping.set()

    async def _signal(
        self, root: str, sig: str, *, include_root: bool, since: str | None, sessions: list[int]
    ) -> None:
        await signals.signal_processes(
            self.backend, self.id, self._host, root, sig,
            include_root=include_root, since=since, alone=self.launcher_pid, sessions=sessions,
        )  # fmt: skip

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
        await self.put_archive(str(target.parent), archives.one_file(target.name, data, mode))

    async def put_archive(self, path: str, tar_bytes: bytes) -> None:
        """Extract a tar archive into ``path`` inside the container."""
        await self.backend.put_archive(self.id, path, tar_bytes)

    async def get_archive(self, path: str) -> bytes:
        """``path`` inside the container as a tar archive (FileNotFoundError when it does not exist)."""
        return await self.backend.get_archive(self.id, path)

    async def copy_in(self, sources: Sequence[tuple[Path, str]], dest_dir: str) -> None:
        """Copy host files into ``dest_dir``; each source is (host path, relative name in dest)."""
        await self.exec(["mkdir", "-p", dest_dir])
        await self.put_archive(dest_dir, archives.host_files(sources))

    async def read_file(self, path: str, max_bytes: int = 64 << 20) -> bytes:
        """Read one regular file from the container."""
        return archives.regular_file(await self.backend.get_archive(self.id, path), path, max_bytes)

    # -- the reading side (see :mod:`.forensics`) -----------------------------------------------
    async def diff(self) -> list[Change]:
        """File-system changes since the sandbox started (see :meth:`Forensics.diff`)."""
        return await self.forensics.diff()

    async def path_states(
        self, deep: Sequence[str] = (), shallow: Sequence[str] = ()
    ) -> dict[str, PathState]:
        """What each path holds (see :meth:`Forensics.path_states`)."""
        return await self.forensics.path_states(deep, shallow)

    @property
    def host_access(self) -> HostAccess | None:
        """The backend's fast paths for this sandbox (None: every answer takes the slow path)."""
        return self._host

    @contextlib.contextmanager
    def slow_paths(self) -> Iterator[None]:
        """Answer every question through the slow paths while inside (the conformance suite checks
        that they give what the fast paths give)."""
        host, self._host = self._host, None
        try:
            yield
        finally:
            self._host = host

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


def _check_volumes(image: str, info: ImageInfo, config: SandboxConfig) -> None:
    """Refuse an image that declares volumes when the sandbox has a disk cap. The engine mounts a
    volume of its own at each declared path, on its disk but outside the container's writable layer:
    neither the engine's quota nor the disk guard sees what is written there, and neither does the
    writable layer's change list."""
    if info.volumes and config.disk_limit_bytes:
        paths = ", ".join(info.volumes)
        raise ConfigError(
            f"image {image!r} declares volumes ({paths}); what a sandbox writes there would bypass its "
            f"disk cap ({config.disk_limit}) and its change list. Rebuild the image without VOLUME, "
            "or create the sandbox with disk_limit=None to run it uncapped"
        )


async def _image_info(backend: Backend, image: str) -> ImageInfo:
    """What ``backend`` knows of ``image`` (kept for the process: its command decides the launcher)."""
    key = (id(backend), image)
    if key not in _image_infos:
        info = await backend.image(image)
        if info is None:
            raise ImageMissing(image)
        _image_infos[key] = info
    return _image_infos[key]


async def _quietly(coro: Any) -> None:
    try:
        await coro
    except Exception:
        pass

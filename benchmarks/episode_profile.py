"""Where the time of a cold Bash gold episode goes: wall and CPU of the harness, the engine and the
containers, phase by phase, and the critical path of one episode at a given concurrency.

Used by ``bench_gold.py --profile``. It patches the library's methods at run time (the library is
unchanged) and measures:

- **wall**: each phase's span, per episode (phases nest: ``submit`` holds ``gold facts``, which holds
  ``gold sandbox``...). Background work (a pool refilling, a released sandbox removed) is its own
  root, tagged with the episode that started it.
- **harness CPU**: exact, per phase. Every callback the event loop runs is timed with the thread's CPU
  clock and charged to the phase its task is in (a context variable), and so is the work the harness
  hands to threads (``asyncio.to_thread``: the overlay and ``/proc`` reads). What the loop does between
  callbacks (its ``select``) is ``event loop``.
- **engine CPU**: dockerd and containerd, read from ``/proc/<pid>/stat`` (their own time and their
  reaped children's) at every phase and engine-call boundary; each interval's CPU is split evenly
  between the engine calls in flight (else the phases in flight: a session's bytes also pass through
  dockerd). The engine is shared with whatever else runs on the machine: the rate it burns while this
  process does nothing is measured first and printed, and subtracted from the totals.
- **runc and the shims**: each container's ``containerd-shim-runc-v2`` (whose reaped children are the
  ``runc create/start/exec/kill`` calls), read just before the container is removed;
- **containers**: each container's cgroup (``cpuacct.usage``), read just before it is removed.

The profiler's own work (reading ``/proc``) is timed and left out of the harness's figures.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import itertools
import os
import statistics
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from intercode_agents.datasets import Task
from intercode_agents.envs import Env, make_env, pooled_env
from intercode_agents.envs import base as env_base
from intercode_agents.envs.bash import env as bash_env
from intercode_agents.envs.bash import facts as bash_facts
from intercode_agents.runner.players import GoldPlayer
from intercode_agents.runner.workers import Episode, run_episodes
from intercode_agents.sandbox import Sandbox, SandboxPool, ShellSession
from intercode_agents.sandbox import forensics as forensics_module
from intercode_agents.sandbox import launcher as launcher_module
from intercode_agents.sandbox.docker.backend import DockerBackend
from intercode_agents.sandbox.docker.fast_paths import LocalHost

CPUACCT = Path("/sys/fs/cgroup/cpuacct/docker")  # cgroup v1; a v2 host has <id>/cpu.stat instead
TICK = os.sysconf("SC_CLK_TCK")
EPISODE: contextvars.ContextVar[int | None] = contextvars.ContextVar("episode", default=None)
PATH: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar("phase", default=())
OWNER: contextvars.ContextVar[Any] = contextvars.ContextVar("phase_owner", default=None)  # its task
LOOP = (None, ("event loop",))  # the loop's own work between callbacks
PROFILER = (None, ("profiler",))


# ------------------------------------------------------------------------------------ the engine
def _proc_cpu(pid: int) -> float:
    """Seconds of CPU of ``pid`` and of the children it reaped."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / TICK


def _find(predicate: Callable[[list[bytes]], bool]) -> list[int]:
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                argv = Path(entry.path, "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if predicate(argv):
                found.append(int(entry.name))
    return found


class Engine:
    """The engine's processes on this host (dockerd, containerd) and each container's shim."""

    def __init__(self) -> None:
        self.daemons = _find(lambda a: Path(a[0].decode(errors="replace")).name in ("dockerd", "containerd"))

    @property
    def readable(self) -> bool:
        return bool(self.daemons)

    def cpu(self) -> float:
        total = 0.0
        for pid in self.daemons:
            try:
                total += _proc_cpu(pid)
            except OSError:
                pass
        return total

    @staticmethod
    def shim_of(container_id: str) -> int | None:
        shims = _find(lambda a: b"-id" in a and container_id.encode() in a and b"shim" in a[0])
        return shims[0] if shims else None

    @staticmethod
    def container_cpu(container_id: str) -> float | None:
        try:
            return int((CPUACCT / container_id / "cpuacct.usage").read_text()) / 1e9
        except OSError:
            return None

    def idle_rate(self, seconds: float = 3.0) -> float:
        """CPU seconds per second the engine burns while this process asks nothing of it."""
        before = self.cpu()
        time.sleep(seconds)
        return (self.cpu() - before) / seconds


# ------------------------------------------------------------------------------------ the record
Key = tuple[int | None, tuple[str, ...]]


@dataclass
class Container:
    role: tuple[str, ...]
    shim: int | None
    shim_cpu: float | None = None
    cpu: float | None = None
    host: Any = None  # its fast paths (the kill from the host comes through them)


@dataclass
class Record:
    """Everything measured in one profiled replay."""

    harness: dict[Key, float] = field(default_factory=lambda: defaultdict(float))
    engine: dict[Key, float] = field(default_factory=lambda: defaultdict(float))
    spans: dict[Key, list[float]] = field(default_factory=lambda: defaultdict(list))
    order: dict[tuple[str, ...], int] = field(default_factory=dict)  # first time each path was seen
    containers: dict[str, Container] = field(default_factory=dict)
    episodes: list[float] = field(default_factory=list)
    wall: float = 0.0
    engine_total: float = 0.0
    idle_rate: float = 0.0
    concurrency: int = 1


class Profiler:
    """Installs the clocks (see the module docstring) while it is active."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.record = Record()
        self._lock = threading.Lock()
        self._current: Key = LOOP
        self._last = time.thread_time()
        self._engine_last = engine.cpu()
        self._open_calls: dict[int, Key] = {}
        self._open_phases: dict[int, Key] = {}
        self._patches: list[tuple[Any, str, Any]] = []
        self._tickets = itertools.count()

    # -- harness CPU -------------------------------------------------------------------------
    def _switch(self, key: Key) -> None:
        now = time.thread_time()
        self.record.harness[self._current] += now - self._last
        self._current, self._last = key, now

    def _own(self, fn: Callable[[], Any]) -> Any:
        """Run profiler work, charged to the profiler, not the harness."""
        key = self._current
        self._switch(PROFILER)
        try:
            return fn()
        finally:
            self._switch(key)

    # -- engine CPU --------------------------------------------------------------------------
    def _tick(self) -> None:
        def read() -> None:
            now = self.engine.cpu()
            delta, self._engine_last = now - self._engine_last, now
            self.record.engine_total += delta
            holders = list(self._open_calls.values()) or _leaves(list(self._open_phases.values()))
            if not holders:
                self.record.engine[(None, ("engine: nothing of ours in flight",))] += delta
                return
            for key in holders:
                self.record.engine[key] += delta / len(holders)

        self._own(read)

    # -- patches -------------------------------------------------------------------------------
    def _patch(self, owner: Any, attr: str, wrapper: Any) -> None:
        original = getattr(owner, attr)
        self._patches.append((owner, attr, original))
        setattr(owner, attr, wrapper(original))

    def phase(self, owner: Any, attr: str, label: str, *, root: bool = False, call: bool = False) -> None:
        """Time ``owner.attr`` (a coroutine function) as the phase ``label``, nested in the caller's
        phase unless ``root``; ``call`` marks an engine call (it takes the engine's CPU first). A
        phase of :data:`AHEAD` started by another phase but run on its own is a root too."""
        profiler = self

        def wrap(fn: Any) -> Any:
            @functools.wraps(fn)
            async def timed(*args: Any, **kwargs: Any) -> Any:
                task = asyncio.current_task()
                if root:
                    path: tuple[str, ...] = (label,)
                elif label in AHEAD and PATH.get() and OWNER.get() is not task:  # runs on its own
                    path = (f"background: {label}",)
                else:
                    path = (*PATH.get(), label)
                token, owner = PATH.set(path), OWNER.set(task)
                key = (EPISODE.get(), path)
                profiler._switch(key)
                profiler.record.order.setdefault(path, len(profiler.record.order))
                profiler._tick()
                opened = profiler._open_calls if call else profiler._open_phases
                ticket = next(profiler._tickets)
                opened[ticket] = key
                started = time.perf_counter()
                try:
                    return await fn(*args, **kwargs)
                finally:
                    profiler.record.spans[key].append(time.perf_counter() - started)
                    profiler._tick()
                    opened.pop(ticket, None)
                    PATH.reset(token)
                    OWNER.reset(owner)
                    profiler._switch((EPISODE.get(), PATH.get()))

            return timed

        self._patch(owner, attr, wrap)

    def _patch_loop(self) -> None:
        profiler = self
        original = asyncio.events.Handle._run

        def _run(handle: asyncio.events.Handle) -> None:
            context = handle._context  # type: ignore[attr-defined]
            profiler._switch((context.get(EPISODE), context.get(PATH, ())))
            try:
                original(handle)
            finally:
                profiler._switch(LOOP)

        self._patches.append((asyncio.events.Handle, "_run", original))
        asyncio.events.Handle._run = _run  # type: ignore[method-assign]

        original_to_thread = asyncio.to_thread

        async def to_thread(func: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
            key = (EPISODE.get(), PATH.get())

            def timed() -> Any:
                started = time.thread_time()
                try:
                    return func(*args, **kwargs)
                finally:
                    with profiler._lock:
                        profiler.record.harness[key] += time.thread_time() - started

            return await original_to_thread(timed)

        self._patches.append((asyncio, "to_thread", original_to_thread))
        asyncio.to_thread = to_thread  # type: ignore[assignment]

    def _patch_containers(self) -> None:
        """Remember which phase made each container and its shim; read their CPU before removal."""
        profiler = self

        def on_start(fn: Any) -> Any:
            @functools.wraps(fn)
            async def start(backend: DockerBackend, sandbox_id: str, **kwargs: Any) -> Any:
                started = await fn(backend, sandbox_id, **kwargs)
                shim = profiler._own(lambda: Engine.shim_of(sandbox_id))
                profiler.record.containers[sandbox_id] = Container(PATH.get(), shim, host=started.host)
                return started

            return start

        def read_before_removal(sandbox_id: str, container: Container) -> None:
            def read() -> None:
                if container.shim is not None:
                    try:
                        container.shim_cpu = _proc_cpu(container.shim)
                    except OSError:
                        pass
                container.cpu = Engine.container_cpu(sandbox_id) or container.cpu

            if container.cpu is None:  # (read once: before the kill, where there is one)
                profiler._own(read)

        def on_remove(fn: Any) -> Any:
            @functools.wraps(fn)
            async def remove(backend: DockerBackend, sandbox_id: str) -> None:
                container = profiler.record.containers.get(sandbox_id)
                if container is not None:
                    read_before_removal(sandbox_id, container)
                await fn(backend, sandbox_id)

            return remove

        def on_kill(fn: Any) -> Any:
            @functools.wraps(fn)
            def kill_all(host: LocalHost) -> None:
                for sandbox_id, container in profiler.record.containers.items():
                    if container.host is host:
                        read_before_removal(sandbox_id, container)
                fn(host)

            return kill_all

        self._patch(DockerBackend, "start", on_start)
        self._patch(DockerBackend, "remove", on_remove)
        self._patch(LocalHost, "kill_all", on_kill)

    def _patch_episodes(self) -> None:
        """Each gold episode gets its number (the context variable its tasks inherit) and its wall."""
        profiler = self
        counter = iter(range(1 << 30))

        def wrap(fn: Any) -> Any:
            @functools.wraps(fn)
            async def play(player: GoldPlayer, env: Env, task: Task, seed: int | None) -> Any:
                token = EPISODE.set(next(counter))
                path_token = PATH.set(())
                profiler._switch((EPISODE.get(), ()))
                started = time.perf_counter()
                try:
                    return await fn(player, env, task, seed)
                finally:
                    profiler.record.episodes.append(time.perf_counter() - started)
                    PATH.reset(path_token)
                    EPISODE.reset(token)

            return play

        self._patch(GoldPlayer, "play", wrap)

    def install(self) -> None:
        self._patch_loop()
        self._patch_episodes()
        self._patch_containers()
        for owner, attr, label, root, call in PHASES:
            if hasattr(owner, attr):
                self.phase(owner, attr, label, root=root, call=call)

    def remove(self) -> None:
        self._switch(LOOP)
        for owner, attr, original in reversed(self._patches):
            setattr(owner, attr, original)
        self._patches.clear()


def _leaves(keys: list[Key]) -> list[Key]:
    """The innermost of the phases in flight (a phase holding another is not charged)."""
    return [k for k in keys if not any(o[1][: len(k[1])] == k[1] and o[1] != k[1] for o in keys)]


AHEAD = {"gold facts"}  # phases an episode starts and does not wait for at once

# (owner, attribute, label, root, engine call)
PHASES: list[tuple[Any, str, str, bool, bool]] = [
    (env_base.Env, "reset", "reset", False, False),
    (pooled_env.PooledEnv, "return_sandbox", "release the last sandbox", False, False),
    (pooled_env.PooledEnv, "take_sandbox", "agent sandbox", False, False),
    (SandboxPool, "acquire", "pool acquire", False, False),
    (Sandbox, "start", "container start", False, False),
    (DockerBackend, "create", "engine: create", False, True),
    (DockerBackend, "attach", "engine: attach", False, True),
    (DockerBackend, "start", "engine: start + inspect", False, True),
    (launcher_module.Launcher, "start", "launcher", False, False),
    (forensics_module.Forensics, "note_engine_own", "reference: engine's own", False, False),
    (forensics_module.Forensics, "take_baseline", "reference: baseline", False, False),
    (forensics_module.Forensics, "fingerprint", "reference: fingerprint", False, False),
    (Sandbox, "shell", "session", False, False),
    (pooled_env.PooledEnv, "_watch_task_files", "task files read", False, False),
    (env_base.Env, "step", "action", False, False),
    (ShellSession, "run", "session command", False, False),
    (pooled_env.PooledEnv, "task_files_now", "task files read", False, False),
    (env_base.Env, "submit", "submit", False, False),
    (bash_env.BashEnv, "_facts", "gold facts", False, False),
    (pooled_env.PooledEnv, "borrow", "gold sandbox", False, False),
    (bash_facts, "gold_facts", "gold run", False, False),
    (bash_env.BashEnv, "_score_with_live_gold", "live gold", False, False),
    (bash_env, "changes_of", "scoring read: changes", False, False),
    (bash_env, "probe", "scoring read: digests", False, False),
    (bash_facts, "changes_of", "scoring read: changes", False, False),
    (bash_facts, "probe", "scoring read: digests", False, False),
    (bash_env.BashEnv, "_image_digests", "image digests", False, False),
    (SandboxPool, "release", "release", False, False),
    (SandboxPool, "_recycle", "background: release", True, False),
    (forensics_module.Forensics, "matches", "verify pristine", False, False),
    (Sandbox, "close", "removal", False, False),
    (DockerBackend, "remove", "engine: remove", False, True),
    (DockerBackend, "exec", "engine: exec", False, True),
    (DockerBackend, "get_archive", "engine: archive", False, True),
    (SandboxPool, "_fill", "background: refill", True, False),
]


async def profiled_replay(tasks: list[Task], concurrency: int, options: dict[str, Any]) -> Record:
    """A cold replay of ``tasks`` (new envs, empty pools, no gold facts) on ``concurrency`` workers,
    with the clocks installed; the pools' removals are waited for."""
    engine = Engine()
    idle = await asyncio.to_thread(engine.idle_rate) if engine.readable else 0.0
    profiler = Profiler(engine)
    envs = [make_env("bash", **options) for _ in range(concurrency)]
    profiler.install()
    started = time.perf_counter()
    try:
        for env in envs:
            await env.start()
        await run_episodes(
            "bash", [Episode(t) for t in tasks], GoldPlayer(), concurrency=concurrency, envs=envs
        )
        for env in envs:
            await env.close()  # the pools' sandboxes go: their removal is part of the cost
        profiler.record.wall = time.perf_counter() - started
    finally:
        profiler.remove()
    profiler.record.idle_rate = idle
    profiler.record.concurrency = concurrency
    return profiler.record


# ------------------------------------------------------------------------------------ printing
def _by_path(table: dict[Key, float]) -> dict[tuple[str, ...], float]:
    out: dict[tuple[str, ...], float] = defaultdict(float)
    for (_, path), value in table.items():
        out[path] += value
    return out


def _inclusive(table: dict[tuple[str, ...], float], path: tuple[str, ...]) -> float:
    return sum(v for p, v in table.items() if p[: len(path)] == path)


def _tree(paths: list[tuple[str, ...]]) -> Iterator[tuple[str, ...]]:
    """Paths in the order a reader follows them: each after its parent, siblings by first sight."""
    yield from sorted(
        paths, key=lambda p: [paths.index(p[:i]) if p[:i] in paths else 0 for i in range(1, len(p) + 1)]
    )


def print_record(record: Record, title: str) -> None:
    n = len(record.episodes)
    harness, engine = _by_path(record.harness), _by_path(record.engine)
    spans: dict[tuple[str, ...], list[float]] = defaultdict(list)
    for (_, path), values in record.spans.items():
        spans[path].extend(values)
    paths = sorted(record.order, key=record.order.__getitem__)
    print(
        f"\n{title}: {n} episodes at c={record.concurrency}, {n / record.wall:.2f} episodes/s "
        f"(wall {record.wall:.1f} s; episode wall mean {1000 * statistics.mean(record.episodes):.0f} ms, "
        f"median {1000 * statistics.median(record.episodes):.0f} ms)"
    )
    print(f"  ms per episode        {'wall':>8} {'calls':>6} {'harness CPU':>12} {'engine CPU':>11}")
    for path in _tree(paths):
        wall = 1000 * sum(spans.get(path, [])) / n
        calls = len(spans.get(path, [])) / n
        name = "  " * (len(path) - 1) + path[-1]
        print(
            f"  {name:<44} {wall:8.1f} {calls:6.2f} {1000 * _inclusive(harness, path) / n:12.2f} "
            f"{1000 * _inclusive(engine, path) / n:11.2f}"
        )
    for extra in (("episode (no phase)",), LOOP[1], PROFILER[1], ("engine: nothing of ours in flight",)):
        h = harness.get(() if extra == ("episode (no phase)",) else extra, 0.0)
        e = engine.get(extra, 0.0)
        print(f"  {extra[0]:<44} {'':>8} {'':>6} {1000 * h / n:12.2f} {1000 * e / n:11.2f}")
    total_harness = sum(v for p, v in harness.items() if p != PROFILER[1])
    ours = record.engine_total - record.idle_rate * record.wall
    roles: dict[str, list[Container]] = defaultdict(list)
    for container in record.containers.values():
        role = (
            container.role[: container.role.index("container start")]
            if "container start" in container.role
            else container.role
        )
        roles[" > ".join(role) or "(outside an episode)"].append(container)
    print("  containers made, by the phase that made them (per episode; runc+shim and container CPU ms each)")
    for role, found in sorted(roles.items(), key=lambda kv: -len(kv[1])):
        shim = [c.shim_cpu for c in found if c.shim_cpu is not None]
        cpu = [c.cpu for c in found if c.cpu is not None]
        runc = 1000 * statistics.mean(shim) if shim else 0.0
        inside = 1000 * statistics.mean(cpu) if cpu else 0.0
        print(f"    {role:<60} {len(found) / n:5.2f}  runc+shim {runc:6.1f}  container {inside:6.1f}")
    shims = sum(c.shim_cpu or 0.0 for c in record.containers.values())
    inside = sum(c.cpu or 0.0 for c in record.containers.values())
    print(
        f"  per episode: harness CPU {1000 * total_harness / n:.1f} ms; engine (dockerd + containerd) "
        f"{1000 * ours / n:.1f} ms after {1000 * record.idle_rate:.0f} ms/s of others' engine work "
        f"({1000 * record.engine_total / n:.1f} ms measured); runc + shims {1000 * shims / n:.1f} ms; "
        f"containers {1000 * inside / n:.1f} ms"
    )


def print_critical_path(record: Record) -> None:
    """One episode's own phases in order (mean wall ms), and what ran in the background meanwhile."""
    n = len(record.episodes)
    spans: dict[tuple[str, ...], list[float]] = defaultdict(list)
    for (_, path), values in record.spans.items():
        spans[path].extend(values)
    mean = 1000 * statistics.mean(record.episodes)
    top = [p for p in sorted(record.order, key=record.order.__getitem__) if len(p) <= 2]
    print(
        f"\nCritical path of one episode at c={record.concurrency} (mean wall ms; {mean:.0f} ms an episode)"
    )
    for path in _tree(top):
        if path[0].startswith("background"):
            continue
        wall = 1000 * sum(spans.get(path, [])) / n
        if wall >= 0.5:
            print(f"  {'  ' * (len(path) - 1)}{path[-1]:<40} {wall:8.1f}  {100 * wall / mean:5.1f}%")
    for path in top:
        if len(path) == 1 and path[0].startswith("background"):
            wall = 1000 * sum(spans.get(path, [])) / n
            print(f"  (off the path) {path[0]:<31} {wall:8.1f}")

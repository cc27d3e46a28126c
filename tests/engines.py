"""Extra engines for the tests: a second dockerd and a Podman API service, started and stopped here.

Neither touches the machine's main dockerd. The second dockerd has its own data root, exec root,
pidfile and unix socket, no bridge and no iptables (``--bridge=none --iptables=false
--ip6tables=false``), and so its own managed containerd. With ``INTERCODE_TEST_XFS=1`` its data root
is a loop-mounted xfs with ``pquota``, so the engine itself caps a sandbox's disk (``StorageOpt
size``). Podman runs rootful (``podman system service``) with its own storage root: on this cgroup v1
host rootless Podman ignores memory, pids and CPU limits (see ``sandbox/docker/podman.py``).

Both are started by the conformance suite's session fixture (``tests/conformance/conftest.py``) when
``INTERCODE_CONFORMANCE_BACKENDS`` names them, and stopped at its end; an engine that already answers
on its socket (left by ``INTERCODE_TEST_KEEP_ENGINES=1``) is reused. ``python -m tests.engines
up|down [dockerd|podman]`` does the same by hand.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

STATE = Path(os.environ.get("INTERCODE_TEST_ENGINES_DIR", "/var/lib/intercode-agents-test"))
RUN = Path("/run/intercode-agents-test")
XFS_SIZE = "12G"


@dataclass(frozen=True)
class ExtraEngine:
    name: str
    spec: str  # the engine string the backends module reads
    socket: Path
    pidfile: Path
    log: Path


DOCKERD = ExtraEngine(
    "dockerd",
    f"unix://{RUN}/dockerd.sock?fast_paths=false",
    RUN / "dockerd.sock",
    RUN / "dockerd.pid",
    STATE / "dockerd.log",
)
PODMAN = ExtraEngine(
    "podman",
    f"podman:unix://{RUN}/podman.sock",
    RUN / "podman.sock",
    RUN / "podman.pid",
    STATE / "podman.log",
)
ENGINES = {e.name: e for e in (DOCKERD, PODMAN)}

# Podman's default rlimits (nofile 1048576) exceed what this VM lets even root raise to, and a
# container that asks for more than the service's hard limit cannot start: give it the host's.
PODMAN_CONF = """[containers]
default_ulimits = ["nofile={nofile}:{nofile}", "nproc={nproc}:{nproc}"]
init_path = "{init}"
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
"""
# Where Podman's init may be (Debian's package puts it in the first, and links it from the second).
PODMAN_INITS = ("/usr/libexec/podman/catatonit", "/usr/bin/catatonit")


def podman_init() -> str | None:
    """The init binary Podman runs in containers made with one (ours all are), or None."""
    return next((path for path in PODMAN_INITS if os.access(path, os.X_OK)), None)


def _answers(socket: Path) -> bool:
    if not socket.exists():
        return False
    probe = ["curl", "-sf", "--max-time", "3", "--unix-socket", str(socket), "http://d/_ping"]
    return subprocess.run(probe, capture_output=True).returncode == 0


def _wait(engine: ExtraEngine, proc: subprocess.Popen[bytes], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if _answers(engine.socket):
            return
        if proc.poll() is not None:
            break
        time.sleep(0.3)
    tail = engine.log.read_text(errors="replace")[-2000:] if engine.log.exists() else ""
    raise RuntimeError(f"{engine.name} did not start; its log ends:\n{tail}")


def _xfs_data_root(root: Path) -> None:
    """Mount a loop-backed xfs with project quotas at ``root`` (made once, reused)."""
    if subprocess.run(["mountpoint", "-q", str(root)]).returncode == 0:
        return
    image = STATE / "dockerd-xfs.img"
    if not image.exists():
        subprocess.run(["truncate", "-s", XFS_SIZE, str(image)], check=True)
        subprocess.run(["mkfs.xfs", "-q", str(image)], check=True)
    root.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-o", "loop,pquota", str(image), str(root)], check=True)


def answers(name: str) -> bool:
    """Whether the engine ``name`` answers on its socket now (started here, or by another process)."""
    return _answers(ENGINES[name].socket)


def start(name: str) -> ExtraEngine:
    """Start the engine ``name`` unless it already answers; return it."""
    engine = ENGINES[name]
    if _answers(engine.socket):
        return engine
    STATE.mkdir(parents=True, exist_ok=True)
    RUN.mkdir(parents=True, exist_ok=True)
    engine.socket.unlink(missing_ok=True)
    log = engine.log.open("ab")
    if name == "dockerd":
        root = STATE / "dockerd"
        if os.environ.get("INTERCODE_TEST_XFS") == "1":
            _xfs_data_root(root)
        argv = [
            "dockerd",
            f"--data-root={root}",
            f"--exec-root={RUN}/dockerd",
            f"--pidfile={engine.pidfile}",
            f"--host=unix://{engine.socket}",
            "--bridge=none",
            "--iptables=false",
            "--ip6tables=false",
            "--storage-driver=overlay2",
            "--log-level=warn",
        ]
        env = dict(os.environ)
    else:
        conf = STATE / "podman-containers.conf"
        nofile = os.sysconf("SC_OPEN_MAX")
        nproc = int(subprocess.run(["sh", "-c", "ulimit -Hu"], capture_output=True, text=True).stdout or 4096)
        conf.write_text(PODMAN_CONF.format(nofile=nofile, nproc=nproc, init=podman_init()))
        argv = [
            "podman",
            f"--root={STATE}/podman/storage",
            f"--runroot={RUN}/podman",
            "--storage-driver=overlay",
            "system",
            "service",
            "--time=0",
            f"unix://{engine.socket}",
        ]
        env = dict(os.environ, CONTAINERS_CONF=str(conf))
    # In the state folder: Podman's conmon writes files (an ``oom`` marker) into its working folder.
    proc = subprocess.Popen(argv, stdout=log, stderr=log, env=env, cwd=STATE, start_new_session=True)
    engine.pidfile.write_text(str(proc.pid)) if name == "podman" else None
    _wait(engine, proc)
    return engine


def stop(name: str) -> None:
    """Stop the engine ``name`` if this module started it (by its pidfile); its data stays."""
    engine = ENGINES[name]
    try:
        pid = int(engine.pidfile.read_text().strip())
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
    except (OSError, ValueError):
        return
    if Path(command.decode(errors="replace")).name != name:
        return  # a stale pidfile (the engine died, the PID is someone else's now)
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    for _ in range(150):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.kill(pid, signal.SIGKILL)
    if name == "podman":
        engine.pidfile.unlink(missing_ok=True)


def available(name: str) -> str | None:
    """Why ``name`` cannot run here (None: it can)."""
    if os.geteuid() != 0:
        return "needs root"
    binary = {"dockerd": "dockerd", "podman": "podman"}[name]
    if shutil.which(binary) is None:
        return f"{binary} is not installed"
    if name == "podman" and podman_init() is None:
        return "catatonit, Podman's init, is not installed (scripts/run.sh setup installs it)"
    if name == "dockerd" and os.environ.get("INTERCODE_TEST_XFS") == "1" and shutil.which("mkfs.xfs") is None:
        return "mkfs.xfs is not installed (xfsprogs)"
    return None


if __name__ == "__main__":
    action, names = sys.argv[1], sys.argv[2:] or list(ENGINES)
    for n in names:
        if action == "up":
            print(start(n).spec)
        else:
            stop(n)

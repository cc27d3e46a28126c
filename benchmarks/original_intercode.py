"""The original InterCode (``intercode-bench==0.1.22``) on this machine, for side-by-side figures.

``bench_gold.py --anchor`` uses it. The original runs in a venv of its own (its dependencies never
meet the project's): made once under the user cache with ``pip install intercode-bench==0.1.22``.
Its images are built here, from its own Dockerfiles adapted to the project's Debian base (no
registry is reachable: ``benchmarks/anchor/*.Dockerfile`` say what differs), with the package's own
``setup_fs.sh``, ``docker.gitignore`` and ``spider_dev.sql``, by ``docker build --network host``:

- ``intercode-bash``: the name the original's BashEnv requires (it picks ``/bin/sh`` by it). Its env
  makes two containers, ``intercode-bash_ic_ctr`` and ``..._eval``, on first use;
- ``intercode-sql``: MariaDB on 127.0.0.1:3307 with the admin account, run here as the container
  ``intercode-sql_ic_ctr`` (host network) that its SqlEnv finds by name, as its docker-compose file
  would have started it.

Each replay runs ``anchor/driver.py`` in the anchor venv and reads its JSON. Every container named
above is removed when the :class:`Original` closes.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from intercode_agents.datasets import Task
from intercode_agents.paths import cache_dir

VERSION = "0.1.22"
HERE = Path(__file__).resolve().parent / "anchor"
BASE = "intercode-agents/base:bookworm"  # the project's debootstrap base (images build makes it)
BASH_IMAGE, SQL_IMAGE = "intercode-bash", "intercode-sql"
CONTAINERS = (f"{BASH_IMAGE}_ic_ctr", f"{BASH_IMAGE}_ic_ctr_eval", f"{SQL_IMAGE}_ic_ctr")
SQL_PORT = 3307
RACE_RETRIES = 10


@dataclass(frozen=True)
class AnchorRun:
    """One replay by the original: start-up seconds, each episode's seconds, rewards, its CPU."""

    startup: float
    walls: list[float]
    rewards: list[float]
    cpu: float

    @property
    def rate(self) -> float:
        """Episodes per second, per episode (start-up left out), as the original is timed."""
        return len(self.walls) / sum(self.walls)

    @property
    def rate_with_startup(self) -> float:
        return len(self.walls) / (sum(self.walls) + self.startup)

    @property
    def solved(self) -> int:
        return sum(r >= 1.0 for r in self.rewards)


def _run(cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, check=False, **kwargs)  # type: ignore[call-overload]


def ensure_venv(log: object = print) -> Path:
    """The anchor venv's Python, made and filled on first use."""
    root = cache_dir() / "anchor" / f"intercode-bench-{VERSION}"
    python = root / "bin" / "python"
    if python.exists() and _run([str(python), "-c", "import intercode.envs"]).returncode == 0:
        return python
    log(f"making the anchor venv {root} (pip install intercode-bench=={VERSION})")  # type: ignore[operator]
    shutil.rmtree(root, ignore_errors=True)
    for cmd in (
        [sys.executable, "-m", "venv", str(root)],
        [str(python), "-m", "pip", "install", "-q", f"intercode-bench=={VERSION}"],
    ):
        done = _run(cmd)
        if done.returncode != 0:
            raise RuntimeError(f"`{' '.join(cmd)}` failed: {(done.stderr or done.stdout)[-800:]}")
    return python


def _assets(python: Path) -> Path:
    found = _run([str(python), "-c", "import intercode, os; print(os.path.dirname(intercode.__file__))"])
    return Path(found.stdout.strip()) / "assets"


def build_images(python: Path, log: object = print) -> None:
    """Build both images (Docker's build cache makes a repeat instant)."""
    if _run(["docker", "image", "inspect", BASE]).returncode != 0:
        raise RuntimeError(f"the base image {BASE} is missing: run `intercode-agents images build` first")
    assets = _assets(python)
    contexts = {
        BASH_IMAGE: (
            "bash.Dockerfile",
            [assets / "docker" / "setup_fs.sh", assets / "docker" / "docker.gitignore"],
        ),
        SQL_IMAGE: ("sql.Dockerfile", [assets / "datasets" / "spider_dev.sql", HERE / "anchor.cnf"]),
    }
    for tag, (dockerfile, files) in contexts.items():
        with tempfile.TemporaryDirectory(prefix="intercode-anchor-") as tmp:
            for f in files:
                shutil.copy(f, tmp)
            shutil.copy(HERE / dockerfile, Path(tmp) / "Dockerfile")
            log(f"building {tag} (docker build --network host)")  # type: ignore[operator]
            cmd = [
                "docker",
                "build",
                "-q",
                "--network",
                "host",
                "--build-arg",
                f"BASE={BASE}",
                "-t",
                tag,
                tmp,
            ]
            done = _run(cmd)
            if done.returncode != 0:
                raise RuntimeError(f"building {tag} failed: {(done.stderr or done.stdout)[-1500:]}")


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


class Original:
    """The original harness, ready to replay (``with Original() as o: o.replay("bash", tasks)``)."""

    def __init__(self, log: object = print) -> None:
        self.log = log
        self.python = ensure_venv(log)
        build_images(self.python, log)

    def __enter__(self) -> Original:
        self._remove()
        if _port_open(SQL_PORT):
            raise RuntimeError(f"port {SQL_PORT} is taken: the original's SQL server needs it")
        name = f"{SQL_IMAGE}_ic_ctr"
        done = _run(["docker", "run", "-d", "--name", name, "--network", "host", SQL_IMAGE])
        if done.returncode != 0:
            raise RuntimeError(f"starting {name} failed: {done.stderr[-500:]}")
        give_up = time.monotonic() + 120
        while not _port_open(SQL_PORT):
            if time.monotonic() > give_up:
                raise RuntimeError(f"{name} did not listen on {SQL_PORT} within 120 s")
            time.sleep(0.2)
        return self

    def __exit__(self, *exc: object) -> None:
        self._remove()

    @staticmethod
    def _remove() -> None:
        _run(["docker", "rm", "-f", *CONTAINERS])

    def replay(self, kind: str, tasks: list[Task], *, fresh: bool = True) -> AnchorRun:
        """The original's gold replay of ``tasks`` (``kind``: bash or sql). ``fresh``: its Bash
        containers are made anew, so its start-up includes them."""
        if fresh and kind == "bash":
            _run(["docker", "rm", "-f", *CONTAINERS[:2]])
        rows = [
            {"query": t.query, "gold": t.gold} | ({"db": t.meta["db"]} if kind == "sql" else {})
            for t in tasks
        ]
        image = BASH_IMAGE if kind == "bash" else SQL_IMAGE
        with tempfile.NamedTemporaryFile("w", suffix=".json", prefix="anchor-tasks-") as f:
            json.dump(rows, f)
            f.flush()
            for _ in range(RACE_RETRIES):
                done = _run([str(self.python), str(HERE / "driver.py"), kind, f.name, image])
                # Its env lists every container of the engine and inspects each: one that another
                # user removed meanwhile fails it with a 404 before it starts. Try again.
                if done.returncode == 0 or "No such container" not in done.stderr:
                    break
        if done.returncode != 0:
            raise RuntimeError(f"the original's {kind} replay failed: {done.stderr[-1500:]}")
        data = json.loads(done.stdout.strip().splitlines()[-1])
        return AnchorRun(data["startup"], data["walls"], data["rewards"], data["cpu"])

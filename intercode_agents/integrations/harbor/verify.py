"""The agent's side of an exported Harbor task, measured inside the task's container, then scored.

``tests/score.py`` of an exported task calls one of these with ``tests/expected.json`` (the gold's
side, computed by our env at export time) and the answer file's text. Each measures what our env
measures of the agent's sandbox, with the means the container has, and scores it with our reward
module for the env, unchanged:

- CTF: the answer is the flag; :func:`intercode_agents.envs.ctf.reward.ctf_reward`.
- SQL: the answer file holds the agent's final query; it runs through the image's own JSON-lines SQL
  helper (``/opt/intercode/sqlhelper.py``, the read-only ``agent`` account: the driver and row values
  our env scores with), and its rows or its error meet the gold's rows in
  :func:`intercode_agents.envs.sql.reward.sql_reward`. No answer file: no query was run.
- Bash: the file system's changes since the image was built (a listing taken then, compared with one
  taken now by Docker's rules, :mod:`intercode_agents.sandbox.root_listing`), the states of the paths
  the reward reads (:mod:`intercode_agents.sandbox.path_states`, read by this process through the
  root folder's descriptor), and the answer text; :func:`intercode_agents.envs.bash.reward.bash_reward`
  against the gold's facts. Harbor's own folders (``/logs``, ``/tests``, ``/solution``), the answer
  file and the build-time listing are not the agent's changes.

This module is copied into each task's ``tests/lib`` (and, for Bash, into the environment, whose last
build step runs :func:`write_baseline`), so it imports only what is copied with it.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

#: Where the Bash environment keeps the listing and path states taken at its build, and the changes
#: the container runtime itself made as the container started (``/.dockerenv``, ``/etc/mtab``, ...).
BASELINE = "/var/lib/intercode-harbor/baseline.json"
RUNTIME_OWN = "/var/lib/intercode-harbor/runtime-own.json"
#: Paths Harbor itself makes in the agent's container: never the agent's changes.
HARBOR_PATHS = ("/logs", "/tests", "/solution", "/var/lib/intercode-harbor")
SQL_HELPER = ["python3", "/opt/intercode/sqlhelper.py"]


def score_ctf(expected: dict[str, Any], answer: str | None) -> Any:
    from intercode_agents.envs.ctf.reward import ctf_reward

    return ctf_reward((answer or "").strip(), expected["gold"], expected["reward_mode"])


def score_sql(expected: dict[str, Any], answer: str | None) -> Any:
    from intercode_agents.envs.sql.reward import SqlOutcome, sql_reward

    gold = SqlOutcome(rows=expected["gold_rows"])
    query = (answer or "").strip()
    if not query:
        agent = SqlOutcome(rows=None, error="no query was run")
    else:
        reply = sql_query(expected["db"], query, float(expected["timeout"]), int(expected["max_rows"]))
        if not reply.get("ok"):
            agent = SqlOutcome(rows=None, error=str(reply.get("error") or "the query failed"))
        elif reply.get("rows") is None or not reply.get("columns"):
            agent = SqlOutcome(rows=None)
        else:
            agent = SqlOutcome(rows=[tuple(r) for r in reply["rows"]])
    return sql_reward(agent, gold, expected["gold"], expected["reward_mode"])


def sql_query(db: str, query: str, timeout: float, max_rows: int) -> dict[str, Any]:
    """One query through the image's SQL helper as the read-only ``agent`` account."""
    requests = [
        {"op": "reset", "db": db},
        {"op": "query", "sql": query, "db": db, "timeout": timeout, "max_rows": max_rows},
    ]
    env = os.environ | {"INTERCODE_SQL_USER": "agent", "INTERCODE_SQL_PASSWORD": ""}
    done = subprocess.run(
        SQL_HELPER,
        input="".join(json.dumps(r) + "\n" for r in requests),
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout + 60,
    )
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    replies = [r for r in lines if "ready" not in r]  # the helper's first line says it is ready
    if len(replies) < 2:
        return {"ok": False, "error": f"the SQL helper did not answer: {done.stderr.strip()[-300:]}"}
    return replies[1] if replies[0].get("ok") else replies[0]


# -- Bash ----------------------------------------------------------------------------------------


def _listing() -> dict[str, Any]:
    from intercode_agents.sandbox.root_listing import LIST_SCRIPT, parse_listing

    done = subprocess.run(["/bin/sh", "-c", LIST_SCRIPT], capture_output=True, check=True)
    return parse_listing(done.stdout.decode("utf-8", errors="surrogateescape"))


def _states(deep: list[str], shallow: list[str]) -> dict[str, Any]:
    from intercode_agents.sandbox.container_fs import ContainerFiles
    from intercode_agents.sandbox.path_states import read_states

    files = ContainerFiles(os.open("/", os.O_RDONLY | os.O_DIRECTORY), ())
    try:
        return read_states(files, deep, shallow)
    finally:
        files.close()


def _ours(path: str, excluded: tuple[str, ...]) -> bool:
    return not any(path == p or path.startswith(p.rstrip("/") + "/") for p in excluded)


def write_baseline(mode: str, path: str = BASELINE) -> None:
    """The build's last step: the root file system's listing, and the state of every path a change
    of which the reward mode counts (what the pristine sandbox held, for the score's base digests)."""
    import dataclasses

    from intercode_agents.envs.bash.changes import in_scope
    from intercode_agents.reward import check_mode

    checked = check_mode(mode)
    listing = _listing()
    scoped = [p for p in listing if p != "/" and in_scope(p, checked) and _ours(p, HARBOR_PATHS)]
    states = _states([], scoped)
    data = {
        "listing": {p: dataclasses.astuple(e) for p, e in listing.items()},
        "states": {p: dataclasses.asdict(s) for p, s in states.items()},
    }
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(data), encoding="utf-8", errors="surrogateescape")


def _build_listing(baseline: str) -> dict[str, Any]:
    from intercode_agents.sandbox.root_listing import Entry

    data = json.loads(Path(baseline).read_text(encoding="utf-8", errors="surrogateescape"))
    return {p: Entry(*e) for p, e in data["listing"].items()}


def note_runtime_own(baseline: str = BASELINE, path: str = RUNTIME_OWN) -> None:
    """The container's entrypoint, before its command: what the runtime changed since the build is no
    change of the agent's (as our sandboxes set aside the engine's own changes at start)."""
    from intercode_agents.sandbox.root_listing import changes

    own = [[c.path, c.kind] for c in changes(_build_listing(baseline), _listing())]
    Path(path).write_text(json.dumps(own), encoding="utf-8", errors="surrogateescape")


def _state(fields: dict[str, Any]) -> Any:
    from intercode_agents.sandbox.path_states import PathState

    return PathState(**fields)


def score_bash(expected: dict[str, Any], answer: str | None, baseline: str = BASELINE) -> Any:
    from intercode_agents.envs.bash.changes import paths_to_probe
    from intercode_agents.envs.bash.reward import BashSide, bash_reward
    from intercode_agents.sandbox.contract import Change
    from intercode_agents.sandbox.path_states import MISSING
    from intercode_agents.sandbox.root_listing import Entry, changes

    mode = expected["reward_mode"]
    data = json.loads(Path(baseline).read_text(encoding="utf-8", errors="surrogateescape"))
    before = {p: Entry(*e) for p, e in data["listing"].items()}
    excluded = (*HARBOR_PATHS, expected["answer_file"])
    own_file = Path(baseline).with_name(Path(RUNTIME_OWN).name)
    own = {Change(p, k) for p, k in json.loads(own_file.read_text())} if own_file.is_file() else set()
    agent_changes = tuple(c for c in changes(before, _listing()) if _ours(c.path, excluded) and c not in own)
    gold_changes = tuple(Change(p, k) for p, k in expected["gold_changes"])
    gold_states = {p: _state(s) for p, s in expected["gold_digests"].items()}
    request = paths_to_probe(agent_changes, gold_changes, mode)
    agent_digests = _states(list(request.deep), list(request.shallow))
    pristine = {p: _state(s) for p, s in data["states"].items()}
    wanted = [*((p, True) for p in request.deep), *((p, False) for p in request.shallow)]
    base = {(p, deep): pristine.get(p, MISSING) for p, deep in wanted}
    gold_digests = {p: _gold_state(p, deep, gold_changes, gold_states, base) for p, deep in wanted}
    return bash_reward(
        BashSide(agent_changes, agent_digests, answer or ""),
        BashSide(gold_changes, gold_digests, expected["gold_output"]),
        mode,
        base_digests={p: base[(p, deep)] for p, deep in wanted},
    )


def _gold_state(path: str, deep: bool, gold_changes: Any, gold_states: Any, base: Any) -> Any:
    """The gold side's state of ``path`` (as :meth:`intercode_agents.envs.bash.facts.GoldFacts.derive`)."""
    from intercode_agents.envs.bash.facts import GoldFacts
    from intercode_agents.sandbox.path_states import MISSING

    return GoldFacts("", tuple(gold_changes), gold_states).derive(path, deep, base) or MISSING


# -- Python --------------------------------------------------------------------------------------


class LocalProcess:
    """A scoring runner started as a process of this container (what a session reads and writes of
    :class:`intercode_agents.sandbox.stream.ProcessStream`)."""

    def __init__(self, proc: Any) -> None:
        self._proc = proc
        self.pid = proc.pid
        self.eof = False

    async def write(self, data: bytes) -> None:
        from intercode_agents.errors import SessionDied

        try:
            self._proc.stdin.write(data)
            await self._proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError) as exc:
            self.eof = True
            raise SessionDied("the process has exited") from exc

    async def read_line(self, timeout: float, limit: int = 1 << 24) -> str:
        import asyncio

        from intercode_agents.errors import SessionDied

        try:
            async with asyncio.timeout(timeout):
                line = await self._proc.stdout.readline()
        except ValueError as exc:  # past the stream's limit
            raise SessionDied(f"a line of output exceeded {limit} bytes") from exc
        if not line.endswith(b"\n"):
            self.eof = True
            raise SessionDied("the process exited")
        return line[:-1].decode("utf-8", errors="replace")

    async def end(self) -> None:
        import asyncio
        import contextlib

        self.eof = True
        with contextlib.suppress(ProcessLookupError):
            self._proc.kill()
        with contextlib.suppress(Exception):
            async with asyncio.timeout(10):
                await self._proc.wait()


class LocalRunners:
    """Where the Python scorer starts its runners here: processes of the verifier's container, the
    agent's code under an account of its own that cannot read tests/ (what
    :class:`intercode_agents.envs.python.scorer.AssertScorer` needs of a sandbox)."""

    stops = 0
    main_pid = None

    def __init__(self, user: str | None) -> None:
        self.user = user

    async def json_session(self, argv: list[str], **kwargs: Any) -> Any:
        from intercode_agents.sandbox.json_session import JsonSession

        host: Any = self  # a SessionHost as far as a JsonSession reads it
        return await JsonSession(host, argv, **kwargs).start()

    async def forget(self, session: Any) -> None:
        await session.close()

    async def start_process(self, argv: list[str], **_: Any) -> LocalProcess:
        import asyncio

        command = list(argv)
        if self.user is not None:
            command = ["setpriv", f"--reuid={self.user}", f"--regid={self.user}", "--clear-groups", *command]
        proc = await asyncio.create_subprocess_exec(
            *command,
            cwd="/",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            limit=1 << 25,
        )
        return LocalProcess(proc)

    async def after_command(self, *, main_doomed: bool = False) -> None:
        return None

    async def end_process(self, proc: LocalProcess, *, busy: bool) -> None:
        await proc.end()


#: The account the agent's code runs under in the verifier (nobody: it cannot read tests/).
PYTHON_AGENT_UID = "65534"


def score_python(expected: dict[str, Any], answer: str | None) -> Any:
    import asyncio

    return asyncio.run(_score_python(expected, answer))


async def _score_python(expected: dict[str, Any], answer: str | None) -> Any:
    from intercode_agents.envs.python.reward import python_reward
    from intercode_agents.envs.python.scorer import AssertScorer, Cell, Program

    tests = list(expected["tests"])
    scorer = AssertScorer(
        tests,
        expected["entry_point"],
        host_code=expected["host_code"],
        test_timeout=expected["test_timeout"],
        load_timeout=expected["load_timeout"],
        check_timeout=expected["check_timeout"],
    )
    setup = expected["test_setup_code"]
    agent = Program((Cell(answer),) if answer else (), setup)
    gold = Program((Cell(expected["gold"]),), setup, whole=True)
    # Sandboxes as far as the scorer reads them (a JSON-lines session of its runner, then forgotten).
    agent_runners: Any = LocalRunners(PYTHON_AGENT_UID)
    gold_runners: Any = LocalRunners(None)
    async with scorer.checker() as checker:
        agent_runs = await scorer.run(agent_runners, agent, checker, "agent")
        gold_runs = await scorer.run(gold_runners, gold, checker)
        agent_outcomes, gold_outcomes = await scorer.outcomes(agent_runs, gold_runs, checker)
    return python_reward(tests, agent_outcomes, gold_outcomes, expected["reward_mode"])

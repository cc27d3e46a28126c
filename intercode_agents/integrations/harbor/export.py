"""Our tasks as Harbor task folders (``intercode-agents export harbor``).

Harbor's task format, ``schema_version = "1.3"``, as read at
harbor-framework/harbor@eb165d99ee2491cacd1f32d7a2eb7fe143a64587 (Harbor 0.13.2;
``src/harbor/models/task/config.py`` and ``docs/content/docs/tasks/index.mdx``). One folder per task::

    <slug>/task.toml          the task, its limits, no network, where the verifier runs
           instruction.md     the question, and where the answer goes
           environment/       Dockerfile building the task's sandbox from our images' sources
           tests/             test.sh, our reward code, the gold's side (computed here by our env)
           solution/solve.sh  the gold (Harbor's oracle agent runs it)

The gold's side of each reward is computed at export time by our own env (the CTF flag; the SQL
gold's rows; the Bash gold's output, changes and their digests: the facts our Bash env stores) and
shipped only in ``tests/``, which the agent's container never holds. test.sh measures the agent's
side (:mod:`.verify`) and scores it with our reward modules, copied unchanged.

Where the verifier runs, per env:

- CTF and Python: in a container of its own (``environment_mode = "separate"``), given only the
  answer file (``artifacts``): scoring runs apart from the agent's processes. Python's verifier is
  our Python image (from its sources) with tests/; the agent's code runs there under ``nobody``, which
  cannot read tests/.
- SQL and Bash: in the agent's container after the agent ends (Harbor's default, ``"shared"``):
  their reward reads the agent's final database or file system, which Harbor's separate verifier
  cannot see (it copies files only). Harbor uploads ``tests/`` only then, so the agent never sees the
  gold; a process the agent leaves running could. The exported README says so.

Both containers have ``network_mode = "no-network"``; test.sh removes any reward file before it writes
its own. What the format cannot say (pids limit, dropped capabilities, disk cap) is in the README.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import shlex
import shutil
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

import intercode_agents
from intercode_agents.datasets import Task
from intercode_agents.datasets.gold_caveats import corrupt_reason
from intercode_agents.datasets.select import select_tasks
from intercode_agents.errors import ConfigError
from intercode_agents.integrations.harbor.environment import write_environment
from intercode_agents.reward import check_mode
from intercode_agents.sandbox.config import SandboxConfig
from intercode_agents.spec import load_spec

FORMAT_VERSION = "1.3"
HARBOR_COMMIT = "eb165d99ee2491cacd1f32d7a2eb7fe143a64587"
ORG = "intercode-agents"
#: The verifier image's default base: any image with Python 3 (a machine without a registry passes its own).
VERIFIER_BASE = "python:3.12-slim"
_PACKAGE = Path(intercode_agents.__file__).resolve().parent
_VERIFY = "integrations/harbor/verify.py"
_REWARD = ("errors.py", "reward.py", _VERIFY)
_SANDBOX_STATES = (
    "sandbox/contract.py",
    "sandbox/path_states.py",
    "sandbox/container_fs.py",
    "sandbox/root_listing.py",
)
_PYTHON_MODULES = (
    *_REWARD,
    *(f"envs/python/{m}.py" for m in ("asserts", "checker", "checks", "reward", "scorer", "values")),
    "sandbox/contract.py",
    "sandbox/path_states.py",
    "sandbox/container_fs.py",
    "sandbox/json_session.py",
    "sandbox/stream.py",
)
_BASH_MODULES = (
    *_REWARD,
    "envs/bash/changes.py",
    "envs/bash/reward.py",
    "envs/bash/facts.py",
    *_SANDBOX_STATES,
)
# The copied sandbox modules' package: what the verifier reads of it (it never starts a sandbox).
_SANDBOX_INIT = """\"\"\"What the Harbor verifier reads of intercode_agents.sandbox (written by
`export harbor`): changes and path states. It never starts a sandbox.\"\"\"

from intercode_agents.sandbox.contract import Change, ChangeKind
from intercode_agents.sandbox.path_states import MISSING, PathState

try:
    from intercode_agents.sandbox.json_session import JsonSession
except ImportError:  # copied only where the Python scorer runs
    JsonSession = object
Sandbox = object  # named only in the copied modules' annotations
__all__ = ["MISSING", "Change", "ChangeKind", "JsonSession", "PathState", "Sandbox"]
"""


def _pip(*packages: str) -> str:
    """A build step installing the reward's Python packages, pinned to the versions this export ran with."""
    pinned = " ".join(f"{p}=={version(p)}" for p in packages)
    return (
        "RUN apt-get update && apt-get install -y --no-install-recommends python3-pip \\\n"
        f"    && pip install --no-cache-dir --break-system-packages {pinned} \\\n"
        "    && rm -rf /var/lib/apt/lists/*\n"
    )


@dataclass(frozen=True)
class Family:
    """What an env needs to be exported: where the agent works and leaves its answer, where the
    verifier runs, the reward code it runs (our modules, copied as they are), the gold's side
    (computed by our env at export time) and the last build steps of the task's environment."""

    workdir: str
    answer_file: str
    answer_is: str  # how instruction.md names the answer
    modules: tuple[str, ...]  # under intercode_agents/
    scorer: str  # a function of .verify, called (expected, answer)
    separate: bool  # the verifier in a container of its own (else in the agent's, after it ends)
    tail: str  # build steps after the task's image (the task's files are in task/)
    healthcheck: str | None  # what must hold before Harbor lets the agent in (its entrypoint has run)
    gold_side: Callable[[list[Task]], Coroutine[Any, Any, dict[str, dict[str, Any] | str]]]


async def _ctf_side(tasks: list[Task]) -> dict[str, dict[str, Any] | str]:
    return {t.id: {"gold": t.gold} for t in tasks}


async def _sql_side(tasks: list[Task]) -> dict[str, dict[str, Any] | str]:
    """The gold's rows, through our SQL env (the driver and values its reward compares)."""
    from intercode_agents.envs import make_env
    from intercode_agents.envs.sql.gold import SCORE_ROW_CAP

    sides: dict[str, dict[str, Any] | str] = {}
    async with make_env("sql") as env:
        for task in tasks:
            await env.reset(task=task)
            await env.step(task.gold)
            rows = env.last_rows  # type: ignore[attr-defined]
            score = (await env.submit()).score
            if rows is None or score is None or score.reward < 1.0 or score.corrupt:
                note = (score.note if score else "") or "no result set"
                sides[task.id] = f"its gold does not score 1 here ({note})"
                continue
            sides[task.id] = {
                "gold": task.gold,
                "gold_rows": [list(r) for r in rows],
                "db": str(task.meta.get("db") or ""),
                "timeout": env.action_timeout,
                "max_rows": SCORE_ROW_CAP,
            }
    return sides


async def _bash_side(tasks: list[Task]) -> dict[str, dict[str, Any] | str]:
    """The gold's facts (output, changes, their digests), as our Bash env stores them."""
    from intercode_agents.envs import make_env

    sides: dict[str, dict[str, Any] | str] = {}
    async with make_env("bash") as env:
        for task in tasks:
            if reason := corrupt_reason(task.id):
                sides[task.id] = f"its gold cannot run here: {reason}"
                continue
            await env.reset(task=task)
            facts = await env.gold_facts()  # type: ignore[attr-defined]
            if facts is None or facts.output is None:
                sides[task.id] = "its gold changes too many paths to ship, or does not finish"
                continue
            await env.step(task.gold)  # the oracle must score 1 (Harbor's adapters' rule), as here
            score = (await env.submit()).score
            if score is None or score.reward < 1.0:
                sides[task.id] = (
                    f"its gold does not score 1 here ({(score.note if score else '') or 'no score'})"
                )
                continue
            sides[task.id] = {
                "gold_output": facts.output,
                "gold_changes": [[c.path, c.kind] for c in facts.changes],
                "gold_digests": {p: dataclasses.asdict(s) for p, s in facts.digests.items()},
            }
    return sides


async def _python_side(tasks: list[Task]) -> dict[str, dict[str, Any] | str]:
    """The gold solution and the task's tests, with our Python env's scoring settings; the verifier
    runs both, as our env does at every submit. A task whose gold does not score 1 here (a test that
    cannot be scored out of the agent's reach, say) is left out."""
    from intercode_agents.envs import make_env

    sides: dict[str, dict[str, Any] | str] = {}
    async with make_env("python") as env:
        for task in tasks:
            entry = str(task.meta.get("entry_point") or "")
            await env.reset(task=task)
            await env.step(task.gold)  # the oracle must score 1 (Harbor's adapters' rule), as here
            score = (await env.submit(entry)).score
            if score is None or score.reward < 1.0:
                note = (score.note if score else "") or "no score"
                sides[task.id] = f"its gold does not score 1 here ({note})"
                continue
            sides[task.id] = {
                "gold": task.gold,
                "tests": list(task.meta.get("tests") or []),
                "entry_point": entry,
                "host_code": str(task.meta.get("host_code") or ""),
                "test_setup_code": str(task.meta.get("test_setup_code") or ""),
                "test_timeout": env.test_timeout,  # type: ignore[attr-defined]
                "load_timeout": env.load_timeout,  # type: ignore[attr-defined]
                "check_timeout": env.check_timeout,  # type: ignore[attr-defined]
            }
    return sides


_BASH_START = """#!/bin/sh
# Notes what the container runtime itself changed as the container started (no change of the
# agent's), then runs the container's command.
PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=/var/lib/intercode-harbor/lib python3 -c \\
    'from intercode_agents.integrations.harbor.verify import note_runtime_own; note_runtime_own()'
exec "$@"
"""

_SQL_START = """#!/bin/sh
# Starts the task's MariaDB server (as the image's user, as our SQL sandbox runs it), then the
# container's command.
if ! mariadb-admin ping --silent > /dev/null 2>&1; then
    mariadbd > /dev/null 2>&1 &
fi
exec "$@"
"""

FAMILIES = {
    "ctf": Family(
        workdir="/ctf",
        answer_file="/ctf/answer.txt",
        answer_is="the flag (only the flag)",
        modules=(*_REWARD, "envs/ctf/reward.py"),
        scorer="score_ctf",
        separate=True,
        tail="COPY task/ /ctf/\nWORKDIR /ctf\n",
        healthcheck=None,
        gold_side=_ctf_side,
    ),
    "python": Family(
        workdir="/python",
        answer_file="/python/solution.py",
        answer_is="your solution (Python code that defines the function the task asks for, with its imports)",
        modules=_PYTHON_MODULES,
        scorer="score_python",
        separate=True,
        tail="RUN mkdir -p /python\nWORKDIR /python\n",
        healthcheck=None,
        gold_side=_python_side,
    ),
    "sql": Family(
        workdir="/sql",
        answer_file="/sql/answer.sql",
        answer_is="your final SQL query (one statement; its result rows are scored)",
        modules=(*_REWARD, "envs/sql/reward.py"),
        scorer="score_sql",
        separate=False,
        tail=(
            "USER root\n" + _pip("scipy") + "COPY task/start-sql.sh /usr/local/bin/intercode-start-sql\n"
            "RUN chmod 755 /usr/local/bin/intercode-start-sql && mkdir -p /sql && chown mysql:mysql /sql\n"
            "USER mysql\nWORKDIR /sql\n"
            'ENTRYPOINT ["/usr/local/bin/intercode-start-sql"]\n'
        ),
        healthcheck="mariadb-admin ping --silent",
        gold_side=_sql_side,
    ),
    "bash": Family(
        workdir="/",
        answer_file="/answer.txt",
        answer_is="the answer the task asks for (the output of the command that answers it)",
        modules=_BASH_MODULES,
        scorer="score_bash",
        separate=False,
        tail=(
            _pip("scikit-learn")
            + "# Last: the file system's listing and path states as built (what the agent's changes are\n"
            "# measured against), taken by intercode-agents' code (no gold in it).\n"
            "COPY task/lib/ /var/lib/intercode-harbor/lib/\n"
            "RUN PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=/var/lib/intercode-harbor/lib python3 -c \\\n"
            "    'from intercode_agents.integrations.harbor.verify import write_baseline; "
            'write_baseline("{mode}")\'\n'
            "COPY task/start-bash.sh /var/lib/intercode-harbor/start.sh\n"
            'ENTRYPOINT ["/bin/sh", "/var/lib/intercode-harbor/start.sh"]\n'
            "WORKDIR /\n"
        ),
        healthcheck="test -f /var/lib/intercode-harbor/runtime-own.json",
        gold_side=_bash_side,
    ),
}


def slug(task_id: str) -> str:
    """A task id as a folder name (and Harbor name part): ``ctf/mini/0`` -> ``ctf__mini__0``."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", task_id.replace("/", "__")).strip("-.") or "task"


def _toml(value: object) -> str:
    return json.dumps(value)  # a JSON string or number is a TOML basic string or number


def task_toml(task: Task, family: Family, mode: str, memory_mb: int) -> str:
    keywords = ["intercode", task.env, *[str(t) for t in task.meta.get("tags", [])]]
    if family.separate:
        verifier = [
            "# Scoring in its own container, built from tests/: the agent's processes never see it.",
            'environment_mode = "separate"',
            "",
            "[verifier.environment]",
            'network_mode = "no-network"',
            "cpus = 1",
            "memory_mb = 512",
        ]
        artifacts = [
            "# The verifier's only input from the agent's container: the answer file.",
            f"artifacts = [{_toml(family.answer_file)}]",
        ]
    else:
        verifier = [
            "# Scoring reads the agent's final state, so it runs in the agent's container once the agent",
            "# has ended (Harbor uploads tests/ only then); a separate verifier could not see that state.",
            'environment_mode = "shared"',
        ]
        artifacts = []
    return "\n".join(
        [
            f"# Harbor task format schema {FORMAT_VERSION} (harbor-framework/harbor@{HARBOR_COMMIT[:8]}).",
            f"schema_version = {_toml(FORMAT_VERSION)}",
            *artifacts,
            "",
            "[task]",
            f"name = {_toml(f'{ORG}/{slug(task.id)}')}",
            f"description = {_toml(f'InterCode {task.env} task {task.id}, exported by intercode-agents')}",
            f"keywords = {json.dumps(keywords)}",
            "",
            "[metadata]",
            f"source = {_toml(str(task.meta.get('source') or 'InterCode (Yang et al., 2023)'))}",
            f"intercode_task_id = {_toml(task.id)}",
            f"reward_mode = {_toml(mode)}",
            "",
            "[verifier]",
            "timeout_sec = 300.0",
            *verifier,
            "",
            "[agent]",
            "timeout_sec = 1800.0",
            "",
            "[environment]",
            'network_mode = "no-network"',
            "cpus = 1",
            f"memory_mb = {memory_mb}",
            "build_timeout_sec = 1800.0",
            f"workdir = {_toml(family.workdir)}",
            *(
                [
                    "",
                    "# The entrypoint's work is done before the agent starts.",
                    "[environment.healthcheck]",
                    f"command = {_toml(family.healthcheck)}",
                    "interval_sec = 1.0",
                    "start_interval_sec = 1.0",
                    "start_period_sec = 120.0",
                ]
                if family.healthcheck
                else []
            ),
            "",
        ]
    )


def instruction(task: Task, family: Family) -> str:
    where = f"You work in `{family.workdir}`."
    if task.env == "sql":
        db = task.meta.get("db")
        where = (
            f"The MariaDB database `{db}` is served in this container; query it with "
            f"`mariadb -u agent {db}` (a read-only account)."
        )
    elif task.env == "ctf":
        where = f"You work in `{family.workdir}`, which holds the task's files."
    elif task.env == "python":
        where = f"The tests call the function `{task.meta.get('entry_point')}`."
    return (
        f"{task.query.strip()}\n\n{where} When you are done, write {family.answer_is} to "
        f"`{family.answer_file}`: that file is what is scored.\n"
    )


def solve_sh(task: Task, family: Family) -> str:
    head = f"#!/bin/sh\n# The gold of {task.id}: what `intercode-agents gold` plays.\n"
    answer = shlex.quote(family.answer_file)
    if task.env == "bash":
        # The gold runs in bash from the sandbox's working folder, as our env runs it; its output is
        # the answer (our env scores the last command's output).
        gold = shlex.quote(task.gold)
        return head + f"cd {shlex.quote(family.workdir)} && bash -c {gold} > {answer} 2>&1\n"
    return head + f"printf '%s\\n' {shlex.quote(task.gold)} > {answer}\n"


TEST_SH = """#!/bin/sh
# Scores the agent's side with intercode-agents' own reward code (tests/lib) against the gold's
# side (tests/expected.json). Any reward file already there is removed first: only this script's
# counts.
mkdir -p /logs/verifier
rm -f /logs/verifier/reward.json /logs/verifier/reward.txt
PYTHONDONTWRITEBYTECODE=1 exec python3 /tests/score.py
"""

SQL_TEST_SH = """#!/bin/sh
# Scores the agent's final query with intercode-agents' own reward code (tests/lib) against the
# gold's rows (tests/expected.json), in the agent's container once the agent has ended. Any reward
# file already there is removed first: only this script's counts.
mkdir -p /logs/verifier
rm -f /logs/verifier/reward.json /logs/verifier/reward.txt
if ! mariadb-admin ping --silent > /dev/null 2>&1; then
    mariadbd > /dev/null 2>&1 &
fi
for _ in $(seq 120); do
    mariadb-admin ping --silent > /dev/null 2>&1 && break
    sleep 0.5
done
PYTHONDONTWRITEBYTECODE=1 exec python3 /tests/score.py
"""

SCORE_PY = '''"""Score the agent as intercode-agents scores a submit (generated by `export harbor`).

Writes /logs/verifier/reward.json (the reward and the numeric reward parts, as Harbor reads it) and
/logs/verifier/parts.json (every part, the reward mode, any note).
"""

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "lib"))
from intercode_agents.integrations.harbor import verify  # noqa: E402

expected = json.loads((HERE / "expected.json").read_text(encoding="utf-8"))
answer_file = Path(expected["answer_file"])
answer = answer_file.read_text(encoding="utf-8", errors="replace") if answer_file.is_file() else None
result = getattr(verify, expected["scorer"])(expected, answer)
numbers = {k: float(v) for k, v in result.parts.items() if isinstance(v, (bool, int, float))}
out = Path("/logs/verifier")
out.mkdir(parents=True, exist_ok=True)
(out / "parts.json").write_text(
    json.dumps(
        {
            "reward": result.reward,
            "parts": result.parts,
            "mode": expected["reward_mode"],
            "note": result.note,
        },
        indent=2,
    ),
    encoding="utf-8",
)
(out / "reward.json").write_text(json.dumps({"reward": float(result.reward), **numbers}), encoding="utf-8")
print(f"reward {result.reward} parts {result.parts}")
'''

VERIFIER_DOCKERFILE = f"""# The verifier's image, built by Harbor from tests/ (environment_mode "separate"):
# Python 3, test.sh, intercode-agents' reward code and the gold. The agent's container never
# holds these.
ARG BASE={VERIFIER_BASE}
FROM ${{BASE}}
COPY . /tests/
RUN chmod +x /tests/test.sh
"""


def copy_modules(modules: tuple[str, ...], lib: Path) -> None:
    """Our modules, copied unchanged under ``lib/intercode_agents/`` (their packages' ``__init__``
    left empty, the sandbox package's naming only what the copies read)."""
    root = lib / "intercode_agents"
    for module in modules:
        target = root / module
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_PACKAGE / module, target)
    for package in {p for m in modules for p in (root / m).parents if p.is_relative_to(root)}:
        (package / "__init__.py").touch()
    if (root / "sandbox").is_dir():
        (root / "sandbox" / "__init__.py").write_text(_SANDBOX_INIT, encoding="utf-8")


def write_tests(task: Task, family: Family, mode: str, side: dict[str, Any], dest: Path) -> None:
    dest.mkdir(parents=True)
    copy_modules(family.modules, dest / "lib")
    expected = {
        "task_id": task.id,
        "answer_file": family.answer_file,
        "reward_mode": mode,
        "scorer": family.scorer,
        **side,
    }
    (dest / "expected.json").write_text(json.dumps(expected, indent=2) + "\n", encoding="utf-8")
    (dest / "score.py").write_text(SCORE_PY, encoding="utf-8")
    (dest / "test.sh").write_text(SQL_TEST_SH if task.env == "sql" else TEST_SH, encoding="utf-8")
    (dest / "test.sh").chmod(0o755)
    if task.env == "python":
        # The verifier is our Python image, from its sources (the scoring runner and the interpreter
        # our env scores with), with tests/ copied in, readable by root only.
        tail = (
            f"FROM {task.image} AS verifier\nCOPY . /tests/\n"
            "RUN chmod -R go-rwx /tests && chmod 700 /tests/test.sh\n"
        )
        write_environment(task.image, dest, tail=tail)
    elif family.separate:
        (dest / "Dockerfile").write_text(VERIFIER_DOCKERFILE, encoding="utf-8")


def _task_files(task: Task, files: Path) -> None:
    """What the task's last build stage copies in (``environment/task/``): never the gold."""
    files.mkdir(parents=True)
    if task.env == "ctf":
        from intercode_agents.envs.ctf.tasks import ctf_asset_files

        root = Path(task.meta["asset_dir"])
        for path in ctf_asset_files(task):
            (files / path.relative_to(root)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, files / path.relative_to(root))
    elif task.env == "sql":
        (files / "start-sql.sh").write_text(_SQL_START, encoding="utf-8")
    elif task.env == "bash":
        copy_modules(_BASH_MODULES, files / "lib")
        (files / "start-bash.sh").write_text(_BASH_START, encoding="utf-8")


def export_task(
    task: Task,
    out_dir: Path,
    side: dict[str, Any],
    *,
    mode: str = "intercode",
    data_root: Path | None = None,
) -> Path:
    """Write one task's Harbor folder under ``out_dir`` (``side``: the gold's side); its path."""
    family = FAMILIES.get(task.env)
    if family is None:
        raise ConfigError(unsupported(task.env))
    if task.unavailable:
        raise ConfigError(f"task {task.id} cannot be exported: {task.unavailable}")
    folder = out_dir / slug(task.id)
    if folder.exists():
        shutil.rmtree(folder)
    environment = folder / "environment"
    _task_files(task, environment / "task")
    tail = f"FROM {task.image} AS task\n{family.tail.replace('{mode}', mode)}" + 'CMD ["sleep", "infinity"]\n'
    write_environment(task.image, environment, tail=tail, data_root=data_root)
    memory = load_spec(task.env).options.get("sandbox_options", {}).get("memory", "1g")
    (folder / "task.toml").write_text(
        task_toml(task, family, mode, SandboxConfig(memory=memory).memory_bytes >> 20), encoding="utf-8"
    )
    (folder / "instruction.md").write_text(instruction(task, family), encoding="utf-8")
    solution = folder / "solution"
    solution.mkdir()
    (solution / "solve.sh").write_text(solve_sh(task, family), encoding="utf-8")
    (solution / "solve.sh").chmod(0o755)
    write_tests(task, family, mode, side, folder / "tests")
    return folder


def unsupported(env: str) -> str:
    return (
        f"export harbor covers the {', '.join(FAMILIES)} envs, not {env!r}: a verifier needs code that "
        "measures the agent's side of each env's reward in the task's container (docs/INTEROP.md)"
    )


def export_tasks(
    selector: str,
    out_dir: Path,
    *,
    env: str | None = None,
    mode: str = "intercode",
    data_root: Path | None = None,
) -> list[Path]:
    """Write one Harbor task folder per task ``selector`` names, and the README beside them. The gold's
    side is computed by our env (for SQL and Bash, in our sandboxes: the engine must run)."""
    mode = check_mode(mode)
    env = env or selector.split("/", 1)[0].split(",", 1)[0]
    family = FAMILIES.get(env)
    if family is None:
        raise ConfigError(unsupported(env))
    chosen = select_tasks(env, selector, data_root=data_root, include_unavailable=True)
    left_out = {t.id: str(t.unavailable) for t in chosen if t.unavailable}
    runnable = [t for t in chosen if not t.unavailable]
    sides: dict[str, dict[str, Any] | str] = asyncio.run(family.gold_side(runnable)) if runnable else {}
    left_out |= {task_id: side for task_id, side in sides.items() if isinstance(side, str)}
    tasks = [t for t in runnable if isinstance(sides.get(t.id), dict)]
    if not tasks:
        why = "; ".join(f"{task_id}: {reason}" for task_id, reason in left_out.items())
        raise ConfigError(
            f"no {env} task matching {selector!r} can be exported" + (f" ({why})" if why else "")
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    folders = []
    for task in tasks:
        side = sides[task.id]
        assert isinstance(side, dict)
        folders.append(export_task(task, out_dir, side, mode=mode, data_root=data_root))
    (out_dir / "README.md").write_text(readme(env, mode, [t.id for t in tasks], left_out), encoding="utf-8")
    return folders


def _verifier_image(env: str) -> str:
    if env == "python":
        return (
            "`tests/Dockerfile`: the verifier's image, our Python image built from its sources with\n"
            "  tests/ readable by root only; the agent's code runs under `nobody`."
        )
    if FAMILIES[env].separate:
        return f"`tests/Dockerfile`: the verifier's image (`ARG BASE`, default `{VERIFIER_BASE}`)."
    return "test.sh runs in the agent's container (see below)."


def readme(env: str, mode: str, ids: list[str], left_out: dict[str, str]) -> str:
    skipped = "".join(f"- {task_id}: {reason}\n" for task_id, reason in left_out.items()) or "none\n"
    family = FAMILIES[env]
    if family.separate:
        where = """- Scoring runs in a separate verifier container (`environment_mode = "separate"`); it
  receives only the answer file (`artifacts`), so processes the agent leaves behind cannot touch it. The gold
  is only in `tests/` (the verifier's image) and `solution/`: never in the agent's container."""
    else:
        state = "database" if env == "sql" else "file system"
        where = f"""- **Scoring runs in the agent's container**, once the agent has ended (`environment_mode =
  "shared"`, Harbor's default): the {env} reward reads the agent's final {state},
  which Harbor's separate verifier cannot see (it copies files only). Harbor uploads `tests/` (the
  gold's side) only then, so the agent never sees it while it works; but a process the agent leaves
  running could read it, or race test.sh. intercode-agents scores from outside the sandbox; Harbor's
  format cannot express that here."""
    extra = ""
    if env == "bash":
        extra = """- The agent's changes are measured against a listing of the file system taken at the
  image's build (`/var/lib/intercode-harbor/baseline.json`, no gold in it); an agent that
  rewrites it can hide its own changes from the score. intercode-agents reads changes from the
  engine, which no agent can alter. Harbor's own folders (`/logs`, `/tests`, `/solution`), the
  answer file, and what the container runtime changed at start (noted by the entrypoint, which the
  healthcheck waits for) are not changes.
- The environment adds scikit-learn (the reward's TF-IDF) to the image, pinned to the version the
  export ran with; the agent can see it.
"""
    elif env == "sql":
        extra = """- The database server runs in the agent's container as the image's user (`mysql`), which
  owns it: the agent could change the data, where intercode-agents gives it a read-only account only. The
  final query is run through the read-only `agent` account on the database as the agent left it;
  the gold's rows were computed on the pristine one at export time.
- The environment adds scipy (the reward's Kendall tau) to the image, pinned to the version the
  export ran with.
"""
    return f"""# InterCode {env} tasks for Harbor (exported by intercode-agents)

{len(ids)} task folders in Harbor's task format, schema {FORMAT_VERSION}
(harbor-framework/harbor@{HARBOR_COMMIT}, Harbor 0.13.2). Reward mode: `{mode}`
(intercode-agents' `--reward`; Harbor has no such notion, so it is fixed in each task's tests/).

Run the oracle (the gold): `harbor run -p <this folder> -a oracle`; every task scores 1.

## What each folder holds

- `instruction.md`: the question, and the file the answer goes to (`{family.answer_file}`).
- `environment/Dockerfile`: our sandbox images' Dockerfiles as stages of one build (their files in a
  sub-folder per stage), then the task's stage. `ARG BASE` is the Debian base (default
  `debian:bookworm-slim`).
- `tests/`: `test.sh`, intercode-agents' own reward code (`tests/lib`, copied unchanged), and the
  gold's side (`expected.json`, computed by intercode-agents' env at export time).
  {_verifier_image(env)}
  It writes `/logs/verifier/reward.json` (the reward and numeric parts) and `parts.json` (all parts).
- `solution/solve.sh`: the gold.

## Guarantees, and what Harbor's format cannot express

{where}
- No network for the agent's container{" nor the verifier's" if family.separate else ""}
  (`network_mode = "no-network"`).
  Agents installed inside the container that call a model API (claude-code, codex, ...) cannot run
  so; agents that drive the container from outside (terminus-2) can.
- test.sh deletes any reward file before it writes its own.
{extra}- **Not expressible in task.toml**, so not enforced by these folders: intercode-agents' pids limit
  (512), dropped capabilities, read-only areas and disk cap. Harbor's docker provider could take them
  from a docker-compose.yaml, other providers cannot; run untrusted agents with that in mind.
- intercode-agents gives each episode a never-used sandbox; Harbor starts a fresh container per
  trial, which is the same.
- An episode with nothing written to the answer file scores what intercode-agents gives an empty
  submission.

Tasks: {", ".join(ids)}

Left out (they cannot run here, or their gold does not score 1 here, as in intercode-agents):
{skipped}"""

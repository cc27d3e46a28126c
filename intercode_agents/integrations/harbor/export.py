"""Our tasks as Harbor task folders (``intercode-agents export harbor``).

Harbor's task format, ``schema_version = "1.3"``, as read at
harbor-framework/harbor@eb165d99ee2491cacd1f32d7a2eb7fe143a64587 (Harbor 0.13.2;
``src/harbor/models/task/config.py`` and ``docs/content/docs/tasks/index.mdx``). One folder per task::

    <slug>/task.toml          the task, its limits, no network, a separate verifier
           instruction.md     the question, and where the answer goes
           environment/       Dockerfile building the task's sandbox from our images' sources
           tests/             the verifier's image: Dockerfile, test.sh, our reward maths, the gold
           solution/solve.sh  the gold (Harbor's oracle agent runs it)

Integrity, as far as the format reaches: the gold and the expected answer live only in ``tests/``
(the verifier's own image, ``environment_mode = "separate"``) and ``solution/`` (uploaded only when
Harbor's oracle plays); the verifier gets nothing of the agent's container but the answer file
(``artifacts``), so scoring runs apart from the agent's processes; both have ``network_mode =
"no-network"``. test.sh removes any reward file before it writes its own. What the format cannot
say (pids limit, dropped capabilities, disk cap) is in the README written beside the folders.

Which envs: the CTF env, whose reward needs only the answer and the gold. The Bash, SQL and Python
rewards compare the agent's final state with the gold replayed in a sandbox of its own (file
system changes, query results, test outcomes), which needs our harness in the verifier; they are
refused with that reason.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import intercode_agents
from intercode_agents.datasets import Task
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


@dataclass(frozen=True)
class Family:
    """What an env needs to be exported: where the agent leaves its answer, the reward code the
    verifier runs (our modules, copied as they are) and the call that scores."""

    workdir: str
    answer_file: str
    answer_is: str  # how instruction.md names the answer
    modules: tuple[str, ...]  # under intercode_agents/
    scorer: str  # "module:function", called (answer, gold, mode)


FAMILIES = {
    "ctf": Family(
        workdir="/ctf",
        answer_file="/ctf/answer.txt",
        answer_is="the flag (only the flag)",
        modules=("errors.py", "reward.py", "envs/ctf/reward.py"),
        scorer="intercode_agents.envs.ctf.reward:ctf_reward",
    ),
}


def slug(task_id: str) -> str:
    """A task id as a folder name (and Harbor name part): ``ctf/mini/0`` -> ``ctf__mini__0``."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", task_id.replace("/", "__")).strip("-.") or "task"


def _toml(value: object) -> str:
    return json.dumps(value)  # a JSON string or number is a TOML basic string or number


def task_toml(task: Task, family: Family, mode: str, memory_mb: int) -> str:
    keywords = ["intercode", task.env, *[str(t) for t in task.meta.get("tags", [])]]
    return "\n".join(
        [
            f"# Harbor task format schema {FORMAT_VERSION} (harbor-framework/harbor@{HARBOR_COMMIT[:8]}).",
            f"schema_version = {_toml(FORMAT_VERSION)}",
            "# The verifier's only input from the agent's container: the answer file.",
            f"artifacts = [{_toml(family.answer_file)}]",
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
            "timeout_sec = 120.0",
            "# Scoring in its own container, built from tests/: the agent's processes never see it.",
            'environment_mode = "separate"',
            "",
            "[verifier.environment]",
            'network_mode = "no-network"',
            "cpus = 1",
            "memory_mb = 512",
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
            "",
        ]
    )


def instruction(task: Task, family: Family) -> str:
    return (
        f"{task.query.strip()}\n\n"
        f"You work in `{family.workdir}`, which holds the task's files. When you are done, write "
        f"{family.answer_is} to `{family.answer_file}`: that file is what is scored.\n"
    )


def solve_sh(task: Task, family: Family) -> str:
    return (
        "#!/bin/sh\n"
        f"# The gold of {task.id}: what `intercode-agents gold` submits.\n"
        f"printf '%s\\n' {shlex.quote(task.gold)} > {shlex.quote(family.answer_file)}\n"
    )


TEST_SH = """#!/bin/sh
# Scores the answer with intercode-agents' own reward code (tests/lib) against the gold
# (tests/expected.json), in the verifier's own container. Any reward file already there is removed
# first: only this script's counts.
mkdir -p /logs/verifier
rm -f /logs/verifier/reward.json /logs/verifier/reward.txt
exec python3 /tests/score.py
"""

SCORE_PY = '''"""Score the agent's answer as intercode-agents scores a submit (generated by `export harbor`).

Writes /logs/verifier/reward.json (the reward and the numeric reward parts, as Harbor reads it) and
/logs/verifier/parts.json (every part, the reward mode, any note).
"""

import importlib
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "lib"))
expected = json.loads((HERE / "expected.json").read_text(encoding="utf-8"))
answer_file = Path(expected["answer_file"])
answer = ""
if answer_file.is_file():
    answer = answer_file.read_text(encoding="utf-8", errors="replace").strip()
module, _, function = expected["scorer"].partition(":")
score = getattr(importlib.import_module(module), function)
result = score(answer, expected["gold"], expected["reward_mode"])
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


def write_tests(task: Task, family: Family, mode: str, dest: Path) -> None:
    dest.mkdir(parents=True)
    for module in family.modules:
        target = dest / "lib" / "intercode_agents" / module
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_PACKAGE / module, target)
    for package in {p for m in family.modules for p in (dest / "lib" / "intercode_agents" / m).parents}:
        if package.is_relative_to(dest / "lib" / "intercode_agents"):
            (package / "__init__.py").touch()
    expected = {
        "task_id": task.id,
        "gold": task.gold,
        "answer_file": family.answer_file,
        "reward_mode": mode,
        "scorer": family.scorer,
    }
    (dest / "expected.json").write_text(json.dumps(expected, indent=2) + "\n", encoding="utf-8")
    (dest / "score.py").write_text(SCORE_PY, encoding="utf-8")
    (dest / "test.sh").write_text(TEST_SH, encoding="utf-8")
    (dest / "test.sh").chmod(0o755)
    (dest / "Dockerfile").write_text(VERIFIER_DOCKERFILE, encoding="utf-8")


def _task_files(task: Task) -> list[tuple[Path, str]]:
    if task.env != "ctf":
        return []
    from intercode_agents.envs.ctf.tasks import ctf_asset_files

    root = Path(task.meta["asset_dir"])
    return [(path, str(path.relative_to(root))) for path in ctf_asset_files(task)]


def export_task(task: Task, out_dir: Path, *, mode: str = "intercode", data_root: Path | None = None) -> Path:
    """Write one task's Harbor folder under ``out_dir``; its path."""
    family = FAMILIES.get(task.env)
    if family is None:
        raise ConfigError(unsupported(task.env))
    if task.unavailable:
        raise ConfigError(f"task {task.id} cannot be exported: {task.unavailable}")
    folder = out_dir / slug(task.id)
    if folder.exists():
        shutil.rmtree(folder)
    environment = folder / "environment"
    files = environment / "task"
    files.mkdir(parents=True)
    for path, rel in _task_files(task):
        (files / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, files / rel)
    tail = (
        f"FROM {task.image} AS task\nCOPY task/ {family.workdir}/\nWORKDIR {family.workdir}\n"
        'CMD ["sleep", "infinity"]\n'
    )
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
    write_tests(task, family, mode, folder / "tests")
    return folder


def unsupported(env: str) -> str:
    return (
        f"export harbor covers the {', '.join(FAMILIES)} env; the {env} reward compares the agent's final "
        "state with the gold replayed in a sandbox of its own, which a Harbor verifier cannot do without "
        "our harness (docs/INTEROP.md)"
    )


def export_tasks(
    selector: str,
    out_dir: Path,
    *,
    env: str | None = None,
    mode: str = "intercode",
    data_root: Path | None = None,
) -> list[Path]:
    """Write one Harbor task folder per task ``selector`` names, and the README beside them."""
    mode = check_mode(mode)
    env = env or selector.split("/", 1)[0].split(",", 1)[0]
    if env not in FAMILIES:
        raise ConfigError(unsupported(env))
    chosen = select_tasks(env, selector, data_root=data_root, include_unavailable=True)
    tasks = [t for t in chosen if not t.unavailable]
    left_out = {t.id: str(t.unavailable) for t in chosen if t.unavailable}
    if not tasks:
        why = "; ".join(f"{task_id}: {reason}" for task_id, reason in left_out.items())
        raise ConfigError(
            f"no {env} task matching {selector!r} can be exported" + (f" ({why})" if why else "")
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    folders = [export_task(task, out_dir, mode=mode, data_root=data_root) for task in tasks]
    (out_dir / "README.md").write_text(readme(env, mode, [t.id for t in tasks], left_out), encoding="utf-8")
    return folders


def readme(env: str, mode: str, ids: list[str], left_out: dict[str, str]) -> str:
    skipped = "".join(f"- {task_id}: {reason}\n" for task_id, reason in left_out.items()) or "none\n"
    return f"""# InterCode {env} tasks for Harbor (exported by intercode-agents)

{len(ids)} task folders in Harbor's task format, schema {FORMAT_VERSION}
(harbor-framework/harbor@{HARBOR_COMMIT}, Harbor 0.13.2). Reward mode: `{mode}`
(intercode-agents' `--reward`; Harbor has no such notion, so it is fixed in each task's tests/).

Run the oracle (the gold): `harbor run -p <this folder> -a oracle`; every task scores 1.

## What each folder holds

- `instruction.md`: the question, and the file the answer goes to.
- `environment/Dockerfile`: our sandbox images' Dockerfiles as stages of one build (their files in a
  sub-folder per stage), then the task's files. `ARG BASE` is the Debian base (default
  `debian:bookworm-slim`).
- `tests/`: the verifier's image (`ARG BASE`, default `{VERIFIER_BASE}`): `test.sh`, intercode-agents'
  own reward code (`tests/lib`), the gold (`expected.json`). It writes `/logs/verifier/reward.json`.
- `solution/solve.sh`: the gold.

## Guarantees, and what Harbor's format cannot express

- The gold and the expected answer are only in `tests/` and `solution/`: never in `environment/`, so
  never in the agent's container (Harbor uploads `solution/` only for its oracle agent).
- Scoring runs in a separate verifier container (`environment_mode = "separate"`); it receives only
  the answer file (`artifacts`), so processes the agent leaves behind cannot touch it.
- No network for the agent's container nor the verifier's (`network_mode = "no-network"`). Agents
  installed inside the container that call a model API (claude-code, codex, ...) cannot run so;
  agents that drive the container from outside (terminus-2) can.
- **Not expressible in task.toml**, so not enforced by these folders: intercode-agents' pids limit
  (512), dropped capabilities, read-only areas and disk cap. Harbor's docker provider could take them
  from a docker-compose.yaml, other providers cannot; run untrusted agents with that in mind.
- intercode-agents gives each episode a never-used sandbox; Harbor starts a fresh container per
  trial, which is the same.
- An episode with nothing written to the answer file scores what intercode-agents gives an empty
  submission.

Tasks: {", ".join(ids)}

Left out (they cannot run without network or lack a file here, as in intercode-agents):
{skipped}"""

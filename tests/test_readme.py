"""Every fenced Python block of the README runs, as a user would paste it, in a fresh interpreter.

Blocks may use ``await`` at the top (the README says so: as in an async function or
``python -m asyncio``); they run on their own event loop. A block that needs an API key says so on a
line of its own, ``# needs: NAME_OF_THE_VARIABLE``, and is skipped when that variable is not set;
every other block must run offline (with the local model or a scripted one). The ``intercode-agents``
commands of the bash blocks must name real sub-commands.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests import ROOT
from tests.cli.test_cli_run_commands import DATA, cli

README = ROOT / "README.md"
FENCE = re.compile(r"^```(\w+)\n(.*?)^```$", re.M | re.S)
NEEDS = re.compile(r"^# needs: ([A-Z][A-Z0-9_]*)", re.M)
RUNNER = """
import ast, asyncio, sys
source = sys.stdin.read()
code = compile(source, "README.md block", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
result = eval(code, {"__name__": "__main__"})
if asyncio.iscoroutine(result):
    asyncio.run(result)
"""


def blocks(language: str) -> list[tuple[int, str]]:
    text = README.read_text(encoding="utf-8")
    return [(text[: m.start()].count("\n") + 1, m[2]) for m in FENCE.finditer(text) if m[1] == language]


PYTHON_BLOCKS = blocks("python")


def test_the_readme_has_the_blocks_it_should() -> None:
    assert len(PYTHON_BLOCKS) >= 5
    assert any('strategy.run(env, "local"' in code for _, code in PYTHON_BLOCKS)  # issue 12's bug
    assert any("def build(tools, model, task)" in code for _, code in PYTHON_BLOCKS)


@pytest.mark.slow
@pytest.mark.timeout(1800)  # the local model on a busy 2-core machine
@pytest.mark.parametrize(("line", "code"), PYTHON_BLOCKS, ids=[f"line{n}" for n, _ in PYTHON_BLOCKS])
def test_a_python_block_runs(line: int, code: str, tmp_path: Path) -> None:
    needed = NEEDS.findall(code)
    missing = [name for name in needed if not os.environ.get(name)]
    if missing:
        pytest.skip(f"README line {line} needs {', '.join(missing)}")
    environ = {**os.environ, "INTERCODE_DATA": DATA}
    done = subprocess.run(
        [sys.executable, "-c", RUNNER],
        input=code,
        cwd=tmp_path,
        env=environ,
        capture_output=True,
        text=True,
        timeout=1700,
    )
    assert done.returncode == 0, f"README block at line {line} failed:\n{done.stderr[-3000:]}"


def test_the_bash_blocks_name_real_commands() -> None:
    commands = set()
    for _, code in blocks("bash"):
        for raw in code.splitlines():
            words = shlex.split(raw, comments=True) if raw.strip() else []
            if words[:1] == ["intercode-agents"] and len(words) > 1:
                commands.add(words[1])
    assert {"eval", "view", "report", "gold", "tasks", "play"} <= commands
    for command in sorted(commands):
        result = cli([command, "--help"])
        assert result.returncode == 0, f"intercode-agents {command} --help: {result.stderr}"


def test_the_readme_names_the_demos_tasks_and_strategy() -> None:
    """The Quick start says which tasks the demo plays and why: they must be the ones scripts/run.sh plays."""
    script = (README.parent / "scripts" / "run.sh").read_text(encoding="utf-8")
    text = README.read_text(encoding="utf-8")
    lists = dict(re.findall(r"^DEMO_(BASH|SQL)=(\S+)$", script, re.M))
    assert set(lists) == {"BASH", "SQL"}
    tasks = [task for value in lists.values() for task in value.split(",")]
    assert len(tasks) == 5
    for task in tasks:
        assert f"`{task}`" in text, f"the README does not say why the demo plays {task}"
    assert "--strategy try_again --turns 2" in script
    assert "Try Again (2 turns" in text

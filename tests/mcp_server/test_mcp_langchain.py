"""Our MCP server's tools, loaded by langchain-mcp-adapters, in LangChain's ``create_agent``: a scripted
model solves a mini task through them (tests/mcp_adapters_client.py, run in the adapters' own venv,
since langchain-mcp-adapters still needs mcp < 2 and the server is built on mcp 2.x)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import docker
import pytest

from intercode_agents.sandbox.config import LABEL_RUN
from tests import ROOT

ROOT = ROOT


@pytest.fixture(scope="module")
def adapters_python() -> str:
    built = subprocess.run(
        [str(ROOT / "scripts" / "mcp-adapters-venv.sh")],
        capture_output=True,
        text=True,
        timeout=900,
        env=dict(os.environ, PYTHON=sys.executable),  # (the Python the project runs on)
    )
    if built.returncode != 0:  # (a set-up failure, never a reason to skip the test)
        pytest.fail(f"the langchain-mcp-adapters venv could not be built: {built.stderr[-1500:]}")
    return str(Path(built.stdout.strip().splitlines()[-1]) / "bin" / "python")


def test_create_agent_solves_a_task_through_the_mcp_tools(adapters_python: str) -> None:
    result = subprocess.run(
        [adapters_python, str(ROOT / "tests" / "mcp_adapters_client.py"), sys.executable],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    names = ["act", "end_episode", "list_tasks", "rollback", "start_episode", "submit"]  # no --evaluate
    assert seen["tools"] == names
    assert sorted(seen["bound"]) == names  # create_agent bound every MCP tool to the model
    answers = seen["answers"]
    assert answers["start_episode"]["question"].startswith("Count the lines")
    assert answers["act"]["observation"] == "2\n"
    assert answers["submit"]["reward"] == pytest.approx(1.0)
    assert answers["end_episode"]["outcome"] == "solved"
    run_id = answers["start_episode"]["sandbox_run"]
    left = docker.from_env().api.containers(all=True, filters={"label": f"{LABEL_RUN}={run_id}"})
    assert left == []

"""Running Inspect in the tests: its CLI through the package's entry point, and its Python API.

The ``inspect`` command finds our task through the ``inspect_ai`` entry point that pyproject.toml
declares. A checkout installed with ``pip install -e '.[test]'`` (CI) has it in its metadata; a
shared venv installed from another checkout may not, so the tests then give the subprocess a
distribution holding exactly the entry point pyproject.toml declares (nothing else), on its path.
"""

from __future__ import annotations

import os
import sys
import tomllib
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from tests import ROOT

ENTRY_POINT_GROUP = "inspect_ai"
ENTRY_POINT_NAME = "intercode_agents"


def declared_entry_point() -> str:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return str(project["entry-points"][ENTRY_POINT_GROUP][ENTRY_POINT_NAME])


@pytest.fixture(scope="session")
def inspect_cli(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The ``inspect`` command and the environment that runs it on this checkout."""
    paths = [str(ROOT)]
    declared = declared_entry_point()
    installed = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == ENTRY_POINT_NAME]
    if not installed:
        site = tmp_path_factory.mktemp("entry-point")
        info = site / "intercode_agents_inspect_entry_point-0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            "Metadata-Version: 2.1\nName: intercode-agents-inspect-entry-point\nVersion: 0\n"
        )
        (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n{ENTRY_POINT_NAME} = {declared}\n")
        paths.append(str(site))
    else:
        assert installed[0].value == declared, (
            "the installed entry point is not the one pyproject.toml declares"
        )
    env = os.environ | {"PYTHONPATH": os.pathsep.join(paths), "INSPECT_DISPLAY": "none"}
    return Path(sys.executable).with_name("inspect"), env


@pytest.fixture(autouse=True)
def _quiet_inspect(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INSPECT_DISPLAY", "none")

"""The layer contract of pyproject.toml holds, it covers every package folder, the package
type-checks, and the code is ruff clean (lint and format).

docs/ARCHITECTURE.md draws the layers; import-linter (``lint-imports``) checks that no module imports
a layer above its own (function-local imports included) and that no package imports another in a
cycle. A new package folder that the contract does not name would escape the check, so the second
test fails until it is given its place. mypy (``[tool.mypy]`` of pyproject.toml) checks the whole
package, so a wrong annotation fails here rather than in a user's editor.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

from tests import ROOT

PACKAGE = ROOT / "intercode_agents"


def _contracts() -> list[dict[str, object]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return list(config["tool"]["importlinter"]["contracts"])


def test_the_layer_contract_is_kept() -> None:
    linter = Path(sys.executable).with_name("lint-imports")  # import-linter, a test dependency
    done = subprocess.run([str(linter)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "Contracts: 2 kept, 0 broken." in done.stdout


def test_the_package_type_checks() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "intercode_agents"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-8000:] + done.stderr[-2000:]


def test_the_code_is_ruff_clean() -> None:
    ruff = Path(sys.executable).with_name("ruff")  # a test dependency
    for argv in (["check", "."], ["format", "--check", "."]):
        done = subprocess.run([str(ruff), *argv], cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def test_every_package_folder_and_top_module_has_a_layer() -> None:
    layers = next(c for c in _contracts() if c["type"] == "layers")["layers"]
    named = {name.strip() for layer in layers for name in str(layer).split("|")}  # type: ignore[attr-defined]
    folders = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    modules = {p.stem for p in PACKAGE.glob("*.py")} - {"__init__", "__main__"}
    assert folders | modules <= named, f"not in the layer contract: {sorted((folders | modules) - named)}"

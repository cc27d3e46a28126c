"""Only the Docker backend (``intercode_agents/sandbox/docker/``) talks to Docker's client libraries.

Every other module, the layers above the sandbox layer (envs, runner, CLI, images) and the sandbox
layer's engine-neutral code alike, reaches an engine only through the backend contract
(``sandbox/contract.py``). The check reads each module's import statements (static, so an import
inside a function counts too) and the lazily imported modules of ``importlib.import_module``.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests import ROOT

PACKAGE = ROOT / "intercode_agents"
DOCKER_BACKEND = PACKAGE / "sandbox" / "docker"
CLIENT_LIBRARIES = ("aiodocker", "docker")


def _imported(tree: ast.AST) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.append((node.lineno, node.args[0].value))
    return found


def _offences(root: Path) -> list[str]:
    offences = []
    for path in sorted(root.rglob("*.py")):
        if DOCKER_BACKEND in path.parents:
            continue
        for line, module in _imported(ast.parse(path.read_text(), str(path))):
            if module.split(".")[0] in CLIENT_LIBRARIES:
                offences.append(f"{path.relative_to(root.parent)}:{line} imports {module}")
    return offences


def test_nothing_outside_the_docker_backend_imports_a_docker_client() -> None:
    assert _offences(PACKAGE) == []


def test_the_check_finds_an_import_of_either_client(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("def f():\n    import aiodocker\n")
    (tmp_path / "pkg" / "b.py").write_text("from docker.errors import APIError\n")
    (tmp_path / "pkg" / "c.py").write_text("import importlib\nimportlib.import_module('docker')\n")
    (tmp_path / "pkg" / "d.py").write_text("import dockerfile_parse\nfrom intercode_agents import docker\n")
    assert _offences(tmp_path / "pkg") == [
        "pkg/a.py:2 imports aiodocker",
        "pkg/b.py:1 imports docker.errors",
        "pkg/c.py:2 imports docker",
    ]

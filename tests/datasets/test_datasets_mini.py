"""The project's own mini task sets: every gold works on its fixture, every flag is recoverable."""

from __future__ import annotations

import base64
import codecs
import subprocess
import time
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import pytest
from docker.errors import ImageNotFound

from intercode_agents.datasets import select_tasks
from intercode_agents.envs.ctf.tasks import ctf_asset_files
from intercode_agents.paths import data_dir

BASE_IMAGE = "intercode-agents/base:bookworm"
LABELS = {"intercode-agents": "1"}


@pytest.fixture(scope="module")
def client() -> Iterator[docker.DockerClient]:
    cli = docker.from_env()
    yield cli
    cli.close()


@pytest.fixture(scope="module")
def bash_mini_image(client: docker.DockerClient) -> Iterator[str]:
    """The project's bash-mini image when built, else a throwaway one: the base plus the fixture script."""
    try:
        client.images.get("intercode-agents/bash-mini:latest")
        yield "intercode-agents/bash-mini:latest"
        return
    except ImageNotFound:
        pass
    script = (data_dir("envs") / "bash" / "mini_fs.sh").read_text()
    builder = client.containers.run(
        BASE_IMAGE, ["bash", "-c", script], detach=True, network_mode="none", labels=LABELS
    )
    try:
        assert builder.wait(timeout=60)["StatusCode"] == 0, builder.logs().decode()
        tag = f"intercode-agents-test/bash-mini:{uuid.uuid4().hex[:8]}"
        builder.commit(repository=tag.split(":")[0], tag=tag.split(":")[1])
    finally:
        builder.remove(force=True)
    yield tag
    client.images.remove(tag, force=True)


def _run_in_fresh_container(
    client: docker.DockerClient, image: str, command: str
) -> tuple[int, str, list[str]]:
    box = client.containers.run(image, ["sleep", "infinity"], detach=True, network_mode="none", labels=LABELS)
    try:
        result = box.exec_run(["bash", "-c", command])
        changes = [f"{c['Kind']} {c['Path']}" for c in client.api.diff(box.id) or []]
        return result.exit_code, result.output.decode(), changes
    finally:
        box.remove(force=True)


BASH_EXPECTED_OUTPUT = {0: "2\n", 1: "cities.csv\nfruits.csv\n", 2: "apple\ncherry\n", 3: "8\n"}
BASH_EXPECTED_CHANGES = {  # Docker kinds: 0 changed, 1 added, 2 deleted
    4: {"1 /testbed/backup", "1 /testbed/backup/todo.txt", "1 /testbed/backup/poem.txt"},
    5: {"0 /testbed/notes/todo.txt"},
    6: {"1 /testbed/data/total.txt"},
    7: {"2 /testbed/logs/archive/app-2024-02.log"},
}


def test_bash_mini_golds_run_on_the_fixture(client: docker.DockerClient, bash_mini_image: str) -> None:
    tasks = select_tasks("bash", "mini")
    assert len(tasks) == 8 and all(t.image == "bash-mini" for t in tasks)
    for n, task in enumerate(tasks):
        code, output, changes = _run_in_fresh_container(client, bash_mini_image, task.gold)
        assert code == 0, (task.id, output)
        if n in BASH_EXPECTED_OUTPUT:
            assert output == BASH_EXPECTED_OUTPUT[n], task.id
            assert changes == [], task.id
        else:
            assert output == "", task.id
            assert BASH_EXPECTED_CHANGES[n] <= set(changes), (task.id, changes)
    _, total, _ = _run_in_fresh_container(
        client, bash_mini_image, f"{tasks[6].gold} && cat /testbed/data/total.txt"
    )
    assert total == "1240000\n"


SQL_EXPECTED = {
    0: "Salt and Stone\nThe Long Winter Road\nThe Quiet Harbour\n",
    1: "Lena Vogt\n",
    2: "Ada Brennan\t3\nTomas Kowal\t1\nMira Osei\t3\nJon Eriksen\t1\nLena Vogt\t1\n",
    3: "fiction\t356.3333\nhistory\t275.0000\nscience\t209.0000\n",
    4: "Salt and Stone\nA Short History of Maps\nPatterns in the Wild\nCounting Stars\n"
    "The Long Winter Road\n",
    5: "Ada Brennan\nMira Osei\n",
}


def test_sql_mini_golds_run_in_mariadb(client: docker.DockerClient) -> None:
    try:
        client.images.get("intercode-agents/sql:latest")
    except ImageNotFound:
        pytest.skip("the intercode-agents/sql image is not built (intercode-agents images build sql)")
    box = client.containers.run(
        "intercode-agents/sql:latest", detach=True, network_mode="none", labels=LABELS
    )
    try:
        deadline = time.monotonic() + 60
        while box.exec_run(["mariadb", "-e", "SELECT 1"]).exit_code != 0:
            assert time.monotonic() < deadline, "MariaDB did not come up in 60 s"
            time.sleep(1)
        for n, task in enumerate(select_tasks("sql", "mini")):
            result = box.exec_run(["mariadb", "-N", "-B", task.meta["db"], "-e", task.gold])
            assert (result.exit_code, result.output.decode()) == (0, SQL_EXPECTED[n]), task.id
    finally:
        box.remove(force=True)


def test_sql_mini_dump_is_mysql_dialect_for_ic_mini() -> None:
    dump = (data_dir("envs") / "sql" / "mini.sql").read_text()
    assert "CREATE DATABASE IF NOT EXISTS `ic_mini`" in dump
    assert dump.count("CREATE TABLE") == 3
    golds = [t.gold.upper() for t in select_tasks("sql", "mini")]
    assert any(" ORDER BY " in g for g in golds)
    assert any(" GROUP BY " in g for g in golds)
    assert any(g.startswith("WITH ") for g in golds)


def test_python_mini_golds_pass_their_tests() -> None:
    tasks = select_tasks("python", "mini")
    assert len(tasks) == 5
    for task in tasks:
        scope: dict[str, object] = {}
        exec(task.meta["test_setup_code"], scope)
        exec(task.gold, scope)
        assert callable(scope[task.meta["entry_point"]]), task.id
        for test in task.meta["tests"]:
            exec(test, scope)
        broken: dict[str, object] = {}  # an off-by-one variant must fail at least one test
        exec(task.meta["test_setup_code"], broken)
        exec(f"def {task.meta['entry_point']}(*args):\n    return None", broken)
        failures = 0
        for test in task.meta["tests"]:
            try:
                exec(test, broken)
            except AssertionError:
                failures += 1
        assert failures > 0, task.id


def test_ctf_mini_flags_are_recoverable_and_solutions_hidden(tmp_path: Path) -> None:
    tasks = {t.meta["task_id"]: t for t in select_tasks("ctf", "mini")}
    assert len(tasks) == 5 and all(t.gold.startswith("picoCTF{") for t in tasks.values())
    files = {n: ctf_asset_files(t) for n, t in tasks.items()}
    assert all(f and all("solution" not in p.parts for p in f) for f in files.values())

    assert base64.b64decode(files[0][0].read_text()).decode() == tasks[0].gold
    assert tasks[1].gold in codecs.decode(files[1][0].read_text(), "rot13")
    with zipfile.ZipFile(files[2][0]) as archive:
        assert archive.read("vault/inner/flag.txt").decode().strip() == tasks[2].gold
    assert tasks[3].gold.encode() in files[3][0].read_bytes()
    strings = subprocess.run(["strings", str(files[3][0])], capture_output=True, text=True, check=False)
    if strings.returncode == 0:  # binutils may be absent on the host
        assert [s for s in strings.stdout.split() if "{" in s] == [tasks[3].gold]

    checker: dict[str, Any] = {
        "__name__": "mini_checker"
    }  # exec, not import: no __pycache__ among the assets
    exec(files[4][0].read_text(), checker)
    recovered = "".join(chr(n ^ checker["KEY"]) for n in checker["EXPECTED"])
    assert (
        recovered == tasks[4].gold and checker["check"](recovered) and not checker["check"]("picoCTF{nope}")
    )

"""What the built images hold: fixture file systems as InterCode made them, tools, pristine runs."""

from __future__ import annotations

from collections.abc import Iterator

import docker
import docker.errors
import pytest

from intercode_agents.errors import DatasetError, EngineUnavailable
from intercode_agents.images import build_images, image_ref

LABELS = {"intercode-agents": "1"}


@pytest.fixture(scope="module")
def client() -> Iterator[docker.DockerClient]:
    try:
        client = docker.from_env()
        client.ping()
    except docker.errors.DockerException as exc:
        pytest.skip(f"no Docker engine: {exc}")
    yield client
    client.close()


def _image(name: str) -> str:
    try:
        (*_, result) = build_images([name], log=lambda line: None)
    except (EngineUnavailable, DatasetError) as exc:
        pytest.skip(f"cannot build {name}: {exc}")
    if result.status == "skipped":
        pytest.skip(f"{name} was skipped: {result.detail}")
    return image_ref(name)


def _run(client: docker.DockerClient, ref: str, script: str) -> str:
    out = client.containers.run(ref, ["bash", "-c", script], remove=True, network_mode="none", labels=LABELS)
    return out.decode()


def test_fixture_scripts_run_under_bash_like_the_original(client: docker.DockerClient) -> None:
    # setup_fs.sh ran under busybox sh on Alpine: `echo -e` interprets escapes and prints no "-e".
    fstest = _run(client, _image("bash-fstest"), "cat /testbed/dir1/subdir1/shellscript1.sh")
    assert fstest == "#!/bin/sh\necho 'Shell script 1'\n"
    # Plain `echo 'a\nb'` under bash keeps the backslash.
    fs1 = _run(client, _image("bash-fs1"), "cat /testbed/dir1/subdir1/textfile4.txt; ls /tmp | wc -l")
    assert fs1 == "Text file 4\\nGene 1\n0\n"


def test_bash_sandbox_stays_pristine_and_has_its_tools(client: docker.DockerClient) -> None:
    container = client.containers.run(
        _image("bash-fs2"), detach=True, network_mode="none", labels=LABELS, init=True
    )
    try:
        tools = "tree bc zip unzip xz file jq column rev cal pstree python3 gawk diff"
        code, out = container.exec_run(["bash", "-c", f"cd /system && ls >/dev/null && command -v {tools}"])
        assert code == 0, out.decode()
        assert len(out.decode().split()) == len(tools.split())
        # The engine adds its init binary (and so touches its parent folders); nothing else may change.
        init_paths = {"/usr", "/usr/sbin", "/usr/sbin/docker-init"}
        assert [c["Path"] for c in container.diff() or [] if c["Path"] not in init_paths] == []
    finally:
        container.remove(force=True)


@pytest.mark.slow  # only when the image must be (re)built: about two minutes
def test_ctf_image_has_the_puzzle_tools(client: docker.DockerClient) -> None:
    ref = _image("ctf")
    script = (
        "pwd; cd /tmp"
        " && printf 'class A{public static void main(String[] a){System.out.println(7);}}' > A.java"
        " && javac A.java && java A"
        " && python3 -B -c 'from Crypto.Util.number import long_to_bytes; print(long_to_bytes(0x6869))'"
        " && command -v gcc gdb objdump xxd exiftool mmls srch_strings nc tshark binwalk | wc -l"
    )
    assert _run(client, ref, script) == "/ctf\n7\nb'hi'\n10\n"

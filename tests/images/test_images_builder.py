"""The image builder against the real engine, on tiny throwaway images built FROM the base."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import docker
import docker.errors
import pytest

from intercode_agents.datasets import resolve_data_root
from intercode_agents.errors import ConfigError, DatasetError, EngineUnavailable, ImageBuildError
from intercode_agents.images import HASH_LABEL, build_images, image_ref, known_images
from intercode_agents.images.catalog import load_catalog

TINY_DOCKERFILE = """\
ARG BASE
FROM ${BASE}
COPY note.txt /note.txt
CMD ["sleep", "infinity"]
"""
CHILD_DOCKERFILE = """\
ARG PARENT
FROM ${PARENT}
COPY extra.txt /extra.txt
"""


@pytest.fixture(scope="module")
def client() -> Iterator[docker.DockerClient]:
    try:
        client = docker.from_env()
        client.ping()
    except docker.errors.DockerException as exc:
        pytest.skip(f"no Docker engine: {exc}")
    yield client
    client.close()


@pytest.fixture
def tiny_dir(tmp_path: Path, client: docker.DockerClient) -> Iterator[tuple[Path, str, str]]:
    """A docker/ folder with two throwaway images: <tag> FROM the base, <tag>-child FROM it."""
    tag = f"selftest-{uuid.uuid4().hex[:8]}"
    (tmp_path / "tiny").mkdir()
    (tmp_path / "tiny" / "Dockerfile").write_text(TINY_DOCKERFILE)
    (tmp_path / "tiny" / "note.txt").write_text("first\n")
    (tmp_path / "child").mkdir()
    (tmp_path / "child" / "Dockerfile").write_text(CHILD_DOCKERFILE)
    (tmp_path / "child" / "extra.txt").write_text("extra\n")
    (tmp_path / "images.yaml").write_text(
        f"images:\n  {tag}-child: {{folder: child, parent: {tag}}}\n  {tag}: {{folder: tiny, parent: base}}\n"
    )
    yield tmp_path, tag, f"{tag}-child"
    for image in client.images.list(filters={"reference": f"intercode-agents/{tag}*"}):
        client.images.remove(image.id, force=True)


def _read(client: docker.DockerClient, ref: str, path: str) -> str:
    out = client.containers.run(
        ref, ["cat", path], remove=True, network_mode="none", labels={"intercode-agents": "1"}
    )
    return out.decode()


def test_image_ref_and_build_order() -> None:
    assert image_ref("bash") == "intercode-agents/bash:latest"
    names = known_images()
    assert {"bash", "bash-fs1", "bash-fs4", "bash-fstest", "bash-mini", "sql", "python", "ctf"} <= set(names)
    catalog = load_catalog()
    for name in names:
        parent = catalog[name].parent
        assert parent == "base" or names.index(parent) < names.index(name), name


def test_unknown_image_name_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"unknown image\(s\) 'nope'.*known images: bash"):
        build_images(["nope"])


def test_parents_come_first_and_rebuilds_cascade(client: docker.DockerClient, tiny_dir: tuple) -> None:
    root, tiny, child = tiny_dir
    lines: list[str] = []
    assert known_images(root) == [tiny, child]  # the table lists the child first

    first = build_images([child], docker_dir=root, log=lines.append)
    assert [(r.name, r.status) for r in first] == [(tiny, "built"), (child, "built")]
    labels = client.images.get(image_ref(tiny)).labels
    assert labels[HASH_LABEL] == first[0].input_hash

    again = build_images([child], docker_dir=root, log=lines.append)
    assert [r.status for r in again] == ["up to date", "up to date"]
    assert [r.image_id for r in again] == [r.image_id for r in first]
    assert f"{tiny}: up to date (intercode-agents/{tiny}:latest)" in lines

    (root / "tiny" / "note.txt").write_text("second\n")
    changed = build_images([child], docker_dir=root, log=lines.append)
    assert [r.status for r in changed] == ["built", "built"]  # a new parent ID rebuilds the child
    assert changed[1].image_id != first[1].image_id
    assert _read(client, image_ref(child), "/note.txt") == "second\n"
    for old in first:  # the superseded versions were deleted
        assert changed[[r.name for r in changed].index(old.name)].replaced_id == old.image_id
        with pytest.raises(docker.errors.ImageNotFound):
            client.images.get(old.image_id)

    forced = build_images([tiny], docker_dir=root, force=True, log=lines.append)
    assert [r.status for r in forced] == ["built"]


def test_failed_build_carries_the_log_tail(tiny_dir: tuple) -> None:
    root, tiny, _ = tiny_dir
    failing = TINY_DOCKERFILE.replace("COPY note.txt /note.txt", "RUN echo about-to-fail && false")
    (root / "tiny" / "Dockerfile").write_text(failing)
    with pytest.raises(ImageBuildError) as info:
        build_images([tiny], docker_dir=root, log=lambda line: None)
    assert info.value.image == tiny
    assert any("about-to-fail" in line for line in info.value.log_tail)
    assert "returned a non-zero code" in str(info.value)


def test_missing_files_fail_or_skip_as_declared(tiny_dir: tuple) -> None:
    root, tiny, child = tiny_dir
    try:
        data_root = resolve_data_root(families=["bash"])
    except DatasetError as exc:
        pytest.skip(f"no InterCode data: {exc}")
    (root / "images.yaml").write_text(
        "images:\n"
        f"  {tiny}: {{folder: tiny, parent: base, files: {{x.sh: 'data:docker/bash_scripts/absent.sh'}}}}\n"
        f"  {child}: {{folder: child, parent: base, files: {{y.sh: 'envs:absent/y.sh'}}, requires: [y.sh]}}\n"
    )
    with pytest.raises(DatasetError, match=r"absent\.sh"):
        build_images([tiny], docker_dir=root, data_root=data_root, log=lambda line: None)
    (skipped,) = build_images([child], docker_dir=root, log=lambda line: None)
    assert skipped.status == "skipped" and "y.sh" in skipped.detail


def test_engine_down_is_engine_unavailable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-such-docker.sock")
    with pytest.raises(EngineUnavailable, match="not reachable"):
        build_images(["bash"], log=lambda line: None)

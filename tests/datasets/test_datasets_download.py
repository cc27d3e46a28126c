"""The verified download into the cache, served from a loopback HTTP server holding the shared data copy."""

from __future__ import annotations

import functools
import hashlib
import os
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from intercode_agents.datasets import INTERCODE_COMMIT, load_tasks, resolve_data_root
from intercode_agents.datasets.manifest import CHECKSUMS_FILE, family_files, parse_checksums
from intercode_agents.errors import DatasetError
from tests import ROOT

SHARED_DATA = ROOT.parent / "shared" / "intercode-data"
DATA = Path(os.environ.get("INTERCODE_DATA") or SHARED_DATA)
pytestmark = pytest.mark.skipif(not (DATA / "data").is_dir(), reason=f"no InterCode data copy at {DATA}")


class _Server:
    def __init__(self, root: Path) -> None:
        self.requests: list[str] = []
        self.corrupt: set[str] = set()  # URL paths answered with wrong bytes
        server = self

        class Handler(SimpleHTTPRequestHandler):
            def do_GET(self) -> None:
                server.requests.append(self.path)
                if self.path in server.corrupt:
                    body = b"not the pinned file"
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                super().do_GET()

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(root)))
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[_Server]:
    srv = _Server(DATA)
    monkeypatch.delenv("INTERCODE_DATA", raising=False)
    monkeypatch.setenv("INTERCODE_DATA_URL", srv.url)
    monkeypatch.setenv("INTERCODE_AGENTS_CACHE", str(tmp_path / "cache"))
    yield srv
    srv.close()


def test_download_fetches_one_family_verifies_and_caches(server: _Server, tmp_path: Path) -> None:
    root = resolve_data_root(families=["bash"])
    assert root == tmp_path / "cache" / "intercode-data" / INTERCODE_COMMIT
    wanted = family_files("bash", parse_checksums((DATA / CHECKSUMS_FILE).read_text(encoding="utf-8")))
    assert len(wanted) == 12  # 5 task files, 5 fixture scripts, gitignore, licence
    assert len(server.requests) == 1 + len(wanted)  # the checksum list first
    for rel, digest in wanted.items():
        assert hashlib.sha256((root / rel).read_bytes()).hexdigest() == digest
    assert (root / ".complete-bash").is_file() and not (root / "data" / "sql").exists()

    assert len(load_tasks("bash")) == 232  # reads the cached copy
    resolve_data_root(families=["bash"])
    assert len(server.requests) == 13  # nothing fetched again
    assert sorted(p.name for p in root.parent.iterdir()) == [INTERCODE_COMMIT, f"{INTERCODE_COMMIT}.lock"]


def test_checksum_mismatch_names_the_file_and_leaves_nothing(server: _Server, tmp_path: Path) -> None:
    server.corrupt.add("/data/python/mbpp/ic_mbpp.json")
    with pytest.raises(
        DatasetError, match=r"checksum mismatch for InterCode file data/python/mbpp/ic_mbpp\.json"
    ):
        resolve_data_root(families=["python"])
    root = tmp_path / "cache" / "intercode-data" / INTERCODE_COMMIT
    assert not (root / ".complete-python").exists()
    assert not (root / "data" / "python").exists()  # staged files never reach the cache
    assert [p.name for p in (tmp_path / "cache" / "intercode-data").iterdir()] == [f"{INTERCODE_COMMIT}.lock"]

    server.corrupt.clear()
    assert (resolve_data_root(families=["python"]) / "data/python/mbpp/ic_mbpp.json").is_file()


def test_a_checksum_list_other_than_the_pinned_one_is_refused(server: _Server, tmp_path: Path) -> None:
    server.corrupt.add(f"/{CHECKSUMS_FILE}")  # a mirror that lists other digests cannot vouch for its files
    with pytest.raises(DatasetError, match=rf"checksum mismatch for InterCode file {CHECKSUMS_FILE}"):
        resolve_data_root(families=["bash"])
    assert server.requests == [f"/{CHECKSUMS_FILE}"]  # no data file was fetched on its word


def test_unreachable_source_is_a_dataset_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("INTERCODE_DATA", raising=False)
    monkeypatch.setenv("INTERCODE_DATA_URL", "http://127.0.0.1:9")  # the discard port: connection refused
    monkeypatch.setenv("INTERCODE_AGENTS_CACHE", str(tmp_path))
    with pytest.raises(DatasetError, match=r"could not download InterCode file .* set INTERCODE_DATA"):
        resolve_data_root(families=["ctf"])

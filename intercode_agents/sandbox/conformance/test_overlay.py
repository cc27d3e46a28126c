"""Changes read from the overlay upper directory agree with the Engine API, and pristine means pristine."""

from __future__ import annotations

import os

import pytest

from intercode_agents.errors import ConfigError, SessionDied
from intercode_agents.sandbox import Sandbox, SandboxPool, resolve_backend
from intercode_agents.sandbox.conformance.fixtures import SLEEPER

# Every kind of change the Engine API distinguishes: new files and folders (and what is inside a new
# folder), edits, mode and owner changes (of a folder too), deletions of files and of whole folders,
# a folder deleted and made again, a folder replaced by a file (a file replaced by a folder has a test
# of its own), symlinks, a hard link, a fifo, odd names, a rename across folders, changes at the top
# level, and what is no change by Docker's rules: a mode set and set back, a folder's time touched, a
# file made and deleted. None of them is where the sandbox's own programs live: on an engine whose
# host cannot read the files, the slow paths refuse to answer then (sandbox/reader_trust.py).
OPERATIONS = r"""
exec 2>&1
mkdir -p /work/a/b && echo x > /work/a/b/c && ln -s /etc/passwd /work/link
echo more >> /etc/issue.net
chmod 600 /etc/host.conf
chown nobody /etc/motd
rm -f /etc/debian_version
rm -rf /var/log/apt /usr/share/doc
rm -rf /usr/share/common-licenses && mkdir /usr/share/common-licenses
echo back > /usr/share/common-licenses/new
rm -rf /usr/share/bash-completion && echo file > /usr/share/bash-completion
rm -f /etc/shells && ln -s /etc/passwd /etc/shells
ln /etc/issue /etc/issue.hard
mkfifo /tmp/fifo
touch "/tmp/we ird
name" /tmp/ünï
mv /etc/profile /root/profile
touch -d 2001-01-01 /etc/bash.bashrc
mkdir /tmp/gone && rmdir /tmp/gone
: > /top-level-file
chown nobody /srv
chmod 600 /etc/gai.conf && chmod 644 /etc/gai.conf
touch /var/tmp
touch /mnt/x && rm /mnt/x
"""


def engine_view(changes: list) -> set[tuple[str, str]]:
    return {(c.path, c.kind) for c in changes}


async def test_overlay_changes_equal_the_engine_api_for_every_kind_of_change(bash_image, backend, fast_paths):
    async with Sandbox(bash_image, backend=backend, cmd=SLEEPER) as sb:
        assert sb.forensics.diff_source == ("overlay" if fast_paths else "engine")
        assert await sb.diff() == []
        result = await sb.exec(OPERATIONS, timeout=60)
        assert result.exit_code == 0, result.output
        fast = engine_view(await sb.diff())
        slow = engine_view(await sb.forensics.engine_changes()) - engine_view(list(sb.forensics.engine_own))
        assert fast == slow
        assert ("/usr/share/bash-completion", "C") in fast and ("/var/log/apt", "D") in fast
        assert ("/work/a/b/c", "A") in fast and ("/usr/share/common-licenses/Apache-2.0", "D") in fast
        assert ("/srv", "C") in fast and ("/etc/gai.conf", "C") not in fast and ("/mnt", "C") not in fast


async def test_a_folder_that_replaced_a_file_is_listed_or_the_list_is_refused(bash_image, backend):
    """Docker lists the folder as changed and what is in it as new. Podman's change list fails then,
    so the programs that read the files from inside cannot be vouched for (sandbox/reader_trust.py):
    a harness fault, never a change list taken on trust."""
    async with Sandbox(bash_image, backend=backend, cmd=SLEEPER) as sb:
        folder = "/usr/share/base-files/info.dir"  # a file in the image
        await sb.exec(f"rm -f {folder} && mkdir {folder} && echo inner > {folder}/inner")
        if backend.type == "podman":
            with pytest.raises(SessionDied, match="would not list the sandbox's changes"):
                await sb.diff()
        else:
            assert {(folder, "C"), (f"{folder}/inner", "A")} <= engine_view(await sb.diff())


async def test_every_backend_gives_the_change_list_of_the_local_docker_engine(bash_image, engine):
    """The same commands, the same changes as Docker's (Podman's own list has other rules: the
    sandbox layer compares listings there, see sandbox/root_listing.py)."""
    if engine.name == "local":
        pytest.skip("the local engine is the reference")

    async def changes(backend) -> tuple[set[tuple[str, str]], set[str]]:
        async with Sandbox(bash_image, backend=backend, cmd=SLEEPER) as sb:
            result = await sb.exec(OPERATIONS, timeout=60)
            assert result.exit_code == 0, result.output
            return engine_view(await sb.diff()), {c.path for c in sb.forensics.engine_own}

    found, _ = await changes(engine.backend)
    docker, docker_own = await changes(resolve_backend("docker"))
    # Docker's diff hides the folders above what Docker itself adds at start (its init, mounted at
    # /usr/sbin/docker-init); another engine adds its own things elsewhere.
    assert {c for c in found if c[0] not in docker_own} == docker


async def test_the_engine_source_gives_the_same_answer_and_bad_sources_are_refused(bash_image, backend):
    async with Sandbox(bash_image, backend=backend, cmd=SLEEPER, diff_source="engine") as sb:
        assert sb.forensics.diff_source == "engine"
        await sb.exec("echo hi > /tmp/new; rm /etc/issue")
        assert engine_view(await sb.diff()) >= {("/tmp/new", "A"), ("/etc/issue", "D")}
    with pytest.raises(ConfigError, match="diff_source"):
        Sandbox(bash_image, backend=backend, diff_source="guess")
    with pytest.raises(ConfigError, match="launcher"):
        Sandbox(bash_image, backend=backend, launcher="sometimes")


@pytest.mark.skipif(os.geteuid() != 0, reason="reading the engine's storage needs root on its host")
async def test_a_folder_changed_and_changed_back_is_not_pristine(bash_image, backend):
    """Docker's change list calls this container unchanged, yet `du` and `ls -l` tell it apart."""
    probe = "stat -c '%h links, %b blocks' /srv"
    async with SandboxPool(bash_image, backend=backend, size=1, cmd=SLEEPER) as pool:
        sb = await pool.acquire(trusted=True)
        before = (await sb.exec(probe)).output
        await sb.exec("touch /srv/tmp && rm /srv/tmp")
        own = sorted(sb.forensics.engine_own)
        assert await sb.diff() == [] and await sb.forensics.engine_changes() == own
        assert (await sb.exec(probe)).output != before
        await pool.release(sb)
        await pool.drain()
        assert pool.stats["replaced"] == 1 and pool.stats["reused"] == 0
        async with pool.sandbox() as fresh:
            assert (await fresh.exec(probe)).output == before


async def test_process_lists_from_the_cgroup_and_from_top_agree(bash_image, backend):
    async with (
        Sandbox(bash_image, backend=backend, cmd=SLEEPER) as sb,
        Sandbox(bash_image, backend=backend, cmd=SLEEPER) as other,
    ):
        await sb.exec("nohup sleep 300 >/dev/null 2>&1 &")
        mine = await sb.processes()
        with sb.slow_paths():  # ask the engine instead
            assert await sb.processes() == mine
        assert len(mine) == 4  # init, the CMD, the launcher and the background sleep
        assert not mine & await other.processes()


def test_the_upper_walk_never_follows_a_symlink_out_of_the_container(tmp_path):
    """A folder swapped for a link to a host path while the walk looks is not entered."""
    from intercode_agents.sandbox.docker.overlay import OverlayLayers, _Folder

    upper, lower = tmp_path / "upper", tmp_path / "lower"
    (lower / "data").mkdir(parents=True)
    (lower / "data" / "kept").write_text("image")
    upper.mkdir()
    (upper / "data").symlink_to("/etc")  # where the image had a folder, the container has a link
    with _Folder.root(str(upper)) as root:
        assert root.child("data") is None
    layers = OverlayLayers(str(upper), (str(lower),))
    assert layers.changes() == [("/data", "C")]
    assert set(layers.entries()) == {"/", "/data"}


def test_listings_compare_by_dockers_rules():
    """The listing comparison of backends whose own change list is not Docker's (Podman's)."""
    from intercode_agents.sandbox.root_listing import changes, parse_listing

    def listing(*records: str) -> dict:
        return parse_listing(
            "".join(f"44 {r}\0" for r in ("d 755 0 0 4096 1.5 /", *records)) + "57 d 555 0 0 0 9.0 /proc\0"
        )

    old = listing(
        "d 755 0 0 4096 1.0 /etc", "f 644 0 0 5 1.0 /etc/a b", "d 755 0 0 4096 1.0 /srv",
        "d 755 0 0 4096 1.0 /gone", "f 644 0 0 1 1.0 /gone/x", "f 755 0 0 9 1.0 /zip",
        "d 755 0 0 4096 1.0 /keep", "f 644 0 0 1 1.0 /keep/x",
    )  # fmt: skip
    new = listing(
        "d 755 0 0 4096 2.0 /etc", "f 644 0 0 5 1.0 /etc/a b", "f 600 0 0 0 2.0 /etc/new\nline",
        "d 755 65534 0 4096 1.0 /srv", "d 755 0 0 4096 2.0 /zip", "f 644 0 0 1 2.0 /zip/inner",
        "d 755 0 0 4096 9.0 /keep", "f 644 0 0 1 1.0 /keep/x",
    )  # fmt: skip
    assert "/proc" not in new  # another device: a mount point
    assert changes(old, new) == [
        ("/etc", "C"), ("/etc/new\nline", "A"), ("/gone", "D"), ("/srv", "C"), ("/zip", "C"),
        ("/zip/inner", "A"),
    ]  # fmt: skip
    assert changes(new, new) == []

"""Path states and mount changes: read from this host, and from inside the sandbox, alike."""

from __future__ import annotations

from intercode_agents.sandbox import Change, Sandbox
from intercode_agents.sandbox.conformance.fixtures import SLEEPER

SETUP = r"""
set -e
mkdir -p /t/d/sub /t/empty
echo one > /t/d/a.txt; printf 'two' > /t/d/sub/b; ln -s a.txt /t/d/rel-link; ln -s /etc/passwd /t/d/abs-link
ln -s /nowhere /t/dangling; ln -s d /t/dir-link; mkfifo /t/fifo
echo exec > /t/x.sh; chmod 4755 /t/x.sh; chown 1000:1000 /t/d/a.txt; chmod 700 /t/d/sub
printf 'name with\ttab' > "/t/d/sp ace"
"""
DEEP = ["/t/d", "/t/empty", "/t/dir-link", "/t", "/testbed-missing"]
SHALLOW = ["/t/d/a.txt", "/t/x.sh", "/t/fifo", "/t/dangling", "/t/dir-link/a.txt", "/dev/null", "/etc", "/"]


async def test_path_states_from_the_host_equal_those_from_inside(bash_image, backend, fast_paths):
    async with Sandbox(bash_image, backend=backend, cmd=SLEEPER) as sb:
        assert sb.forensics.reads_from_host == fast_paths
        assert (await sb.exec(SETUP)).exit_code == 0
        host = await sb.path_states(DEEP, SHALLOW)
        with sb.slow_paths():
            inside = await sb.path_states(DEEP, SHALLOW)
        assert host == inside
        assert host["/t/x.sh"].mode == 0o4755 and host["/t/d/a.txt"].uid == 1000
        assert host["/t/d"].files == 5 and host["/t/empty"].files == 0
        assert host["/t/dir-link/a.txt"] == host["/t/d/a.txt"]  # an inner link is followed in the container
        assert host["/t/fifo"].kind == "other" and host["/testbed-missing"].kind == "missing"


async def test_contents_from_the_host_equal_those_of_the_engines_archive(bash_image, backend, fast_paths):
    async with Sandbox(bash_image, backend=backend, cmd=SLEEPER) as sb:
        assert (await sb.exec(SETUP + "ln /t/d/a.txt /t/d/hard")).exit_code == 0
        host = await sb.forensics.contents("/t")
        assert host is not None  # within the default size cap
        with sb.slow_paths():
            engine = await sb.forensics.contents("/t")
            assert (
                await sb.forensics.contents("/t/x.sh") == {} and await sb.forensics.contents("/nowhere") == {}
            )
            assert await sb.forensics.contents("/t", max_bytes=4) is None
        assert host == engine
        assert set(host) == {
            "/t/d", "/t/d/a.txt", "/t/d/hard", "/t/d/sub", "/t/d/sub/b", "/t/d/rel-link", "/t/d/abs-link",
            "/t/d/sp ace", "/t/empty", "/t/dangling", "/t/dir-link", "/t/fifo", "/t/x.sh",
        }  # fmt: skip
        states = await sb.path_states(shallow=["/t/d/a.txt", "/t/dir-link"])
        assert host["/t/d/a.txt"] == ("file", states["/t/d/a.txt"].md5) == host["/t/d/hard"]
        assert host["/t/dir-link"] == ("link", states["/t/dir-link"].md5)
        assert host["/t/d/sub"] == ("dir", None) and host["/t/fifo"] == ("other", None)
        assert (
            await sb.forensics.contents("/t", max_bytes=4) is None
            and await sb.forensics.contents("/nowhere") == {}
        )


async def test_mount_changes_are_seen_from_the_host_and_from_inside(bash_image, backend):
    async with Sandbox(bash_image, backend=backend, cmd=SLEEPER) as sb:
        assert await sb.diff() == []
        await sb.exec(
            "echo x > /dev/shm/new; echo planted > /etc/hostname; touch /dev/mqueue/q; "
            "touch /dev/shm/gone && rm /dev/shm/gone"
        )
        host = await sb.diff()
        with sb.slow_paths():
            inside = await sb.diff()
        assert host == inside
        assert {
            Change("/dev/shm/new", "A"),
            Change("/etc/hostname", "C"),
            Change("/dev/mqueue/q", "A"),
        } <= set(host)
        assert not any("gone" in c.path for c in host)  # made and deleted: no change

"""Issue finding 3: a sandbox cannot fill the host's disk."""

from __future__ import annotations

import subprocess

import pytest

from intercode_agents import make_env
from intercode_agents.errors import ConfigError
from intercode_agents.sandbox import RUN_ID, Sandbox
from tests.docker_helpers import containers_of_run

MiB = 1 << 20
FLOOD = "i=0; while :; do head -c 20M /dev/zero > /tmp/f$i || break; i=$((i+1)); done; echo unreachable"


async def test_one_file_stops_at_the_cap(bash_image):
    async with Sandbox(bash_image, disk_limit="100m") as sb:
        shell = await sb.shell()
        r = await shell.run("head -c 300M /dev/zero > /tmp/big; echo rc=$?; stat -c %s /tmp/big", timeout=60)
        assert "File size limit exceeded" in r.output and "rc=153" in r.output
        assert r.output.strip().endswith(str(100 * MiB))


async def test_many_files_stop_the_command_with_a_notice_and_the_sandbox_goes_on(bash_image):
    async with Sandbox(bash_image, disk_limit="150m") as sb:
        if sb.disk_guard is None:
            pytest.skip("this engine enforces the cap itself (StorageOpt)")
        shell = await sb.shell()
        r = await shell.run(FLOOD, timeout=120)
        assert not r.timed_out and "unreachable" not in r.output  # stopped, long before its deadline
        assert "disk cap of 150.0 MiB" in (sb.take_notice() or "")
        used = await sb.disk_usage()
        # Over by what a few watchdog intervals write (an unstopped flood would write until its 120 s
        # deadline); on a loaded machine an interval can slip to a second or more.
        assert 150 * MiB < used < 150 * MiB + 1024 * MiB
        r = await shell.run("rm -f /tmp/f*; head -c 10M /dev/zero > /tmp/small && echo written")
        assert r.output == "written\n" and sb.take_notice() is None


async def test_the_env_observation_says_why_the_command_stopped():
    async with make_env("bash", sandbox_options={"disk_limit": "120m"}) as env:
        await env.reset(task_id="bash/mini/0")
        if env.sandbox.disk_guard is None:
            pytest.skip("this engine enforces the cap itself (StorageOpt)")
        obs, _, _, _, info = await env.gym.step(FLOOD)
        assert "over its disk cap of 120.0 MiB" in obs and info["errored"]
        obs, *_ = await env.gym.step("echo next")
        assert obs == "next\n"


def test_a_bad_disk_limit_is_a_clear_error(bash_image):
    with pytest.raises(ConfigError, match="disk_limit must be a size"):
        Sandbox(bash_image, disk_limit="lots")
    with pytest.raises(ConfigError, match="at least 1m"):
        Sandbox(bash_image, disk_limit=4096)


@pytest.fixture(scope="module")
def volume_image(bash_image: str) -> str:
    """An image that declares a volume (as the official database images do)."""
    tag = "intercode-agents-test/volume:latest"
    dockerfile = f"FROM {bash_image}\nVOLUME /data\n"
    subprocess.run(
        ["docker", "build", "--network", "host", "-q", "-t", tag, "-"], input=dockerfile, text=True,
        capture_output=True, check=True,
    )  # fmt: skip
    return tag


async def test_an_image_volume_would_bypass_the_cap_so_it_is_refused(volume_image):
    """A declared volume lives on the engine's disk outside the writable layer: 270 MB went into one
    past a 100 MB cap, unseen by the disk guard and by the change list. So it is refused by name."""
    before = set(containers_of_run(RUN_ID))
    with pytest.raises(ConfigError, match=r"declares volumes \(/data\).*disk_limit=None"):
        await Sandbox(volume_image, disk_limit="100m").start()
    assert set(containers_of_run(RUN_ID)) <= before  # refused before anything was created
    async with Sandbox(volume_image, disk_limit=None) as sb:  # the cap waived, explicitly
        assert (await sb.exec("test -d /data && echo yes")).output == "yes\n"


async def test_what_a_sandbox_prints_is_not_kept_on_the_engines_disk(bash_image):
    """The engine keeps no log of a sandbox's output: 30 MB printed leave no file behind (Docker's
    default log driver kept a copy of every byte, unbounded, outside the disk cap)."""
    async with Sandbox(bash_image) as sb:
        shell = await sb.shell()
        r = await shell.run("head -c 30000000 /dev/zero | tr '\\0' x | fold -w 1000; echo done", timeout=60)
        assert r.truncated
        info = await sb.backend.inspect(sb.id)  # type: ignore[attr-defined]
        assert info["HostConfig"]["LogConfig"]["Type"] == "none"
        assert not info.get("LogPath"), info.get("LogPath")  # no log file at all

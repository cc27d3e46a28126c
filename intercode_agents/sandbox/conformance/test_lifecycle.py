"""Sandbox lifecycle and isolation: limits, network, files, concurrency, cancellation, clean-up, errors."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import uuid

import pytest

from intercode_agents.errors import ImageMissing
from intercode_agents.sandbox import RUN_ID, Sandbox, cleanup_containers
from intercode_agents.sandbox.conformance.fixtures import SLEEPER, containers_of_run


async def test_no_network_inside(bash_image, backend):
    async with Sandbox(bash_image, backend=backend, cmd=SLEEPER) as sb:
        sh = await sb.shell()
        assert (await sh.run("ls /sys/class/net")).output.split() == ["lo"]
        r = await sh.run("(exec 3<>/dev/tcp/1.1.1.1/80) 2>&1; echo rc=$?", timeout=10)
        assert "rc=0" not in r.output
        r = await sh.run("(exec 3<>/dev/tcp/10.0.0.1/22) 2>&1; echo rc=$?", timeout=10)
        assert "rc=0" not in r.output


async def test_container_carries_isolation_defaults_and_labels(bash_image, backend):
    async with Sandbox(bash_image, backend=backend, cmd=SLEEPER) as sb:
        inspect = getattr(sb.backend, "inspect", None)  # not part of the Backend contract
        assert inspect is not None, "this check reads the container through a Docker-style inspect(id)"
        info = await inspect(sb.id)
        host = info["HostConfig"]
        assert host["NetworkMode"] == "none"
        assert host["Memory"] > 0 and host["PidsLimit"] > 0 and host["CpuShares"] > 0
        assert "no-new-privileges" in host["SecurityOpt"]
        # Docker reports the drop as asked (["ALL"]), Podman as the capabilities it dropped: either way
        # the sandbox's bounding set is only the few the config adds.
        bounding = int((await sb.exec("grep CapBnd /proc/self/status")).output.split()[1], 16)
        assert bin(bounding).count("1") == len(sb.config.cap_add), hex(bounding)
        assert host["Init"] is True
        assert not host.get("PortBindings")
        # The engine keeps no copy of the sandbox's output: no log file outside the disk cap.
        assert host["LogConfig"]["Type"] == "none", host["LogConfig"]
        labels = info["Config"]["Labels"]
        assert labels["intercode-agents"] == "1" and labels["intercode-agents.run"] == RUN_ID


async def test_fork_bomb_is_contained(bash_image, backend):
    async with Sandbox(bash_image, backend=backend, cmd=SLEEPER, pids_limit=64) as sb:
        sh = await sb.shell()
        r = await sh.run("bash -c ':(){ :|:& };:' 2>/dev/null; sleep 3", timeout=4)
        assert r.timed_out or r.exit_code is not None
    async with Sandbox(bash_image, backend=backend, cmd=SLEEPER) as fresh:
        assert (await (await fresh.shell()).run("echo ok")).output == "ok\n"


async def test_memory_bomb_is_killed_not_the_harness(bash_image, backend):
    async with Sandbox(bash_image, backend=backend, cmd=SLEEPER, memory="128m") as sb:
        sh = await sb.shell()
        hog = "head -c 2000000000 /dev/zero | tail -c 1000000000 >/dev/null; echo rc=$?"
        r = await sh.run(hog, timeout=60)
        assert "rc=137" in r.output or r.restarted  # the OOM killer took the hog
        assert (await sh.run("echo still here")).output == "still here\n"


async def test_files_round_trip_and_diff(bash_image, backend):
    async with Sandbox(bash_image, backend=backend, cmd=SLEEPER) as sb:
        assert await sb.diff() == []
        payload = bytes(range(256)) * 10
        await sb.write_file("/tmp/blob.bin", payload)
        assert await sb.read_file("/tmp/blob.bin") == payload
        await sb.exec(["rm", "/etc/issue"])
        changes = {(c.path, c.kind) for c in await sb.diff()}
        assert ("/tmp/blob.bin", "A") in changes and ("/etc/issue", "D") in changes
        with pytest.raises(FileNotFoundError):
            await sb.read_file("/no/such/file")


async def test_one_off_exec_returns_output_code_and_honours_timeout(bash_image, backend):
    async with Sandbox(bash_image, backend=backend, cmd=SLEEPER) as sb:
        r = await sb.exec(["ls", "/"])
        assert r.exit_code == 0 and "etc" in r.output.split()
        r = await sb.exec("echo oops >&2; exit 7")
        assert r.exit_code == 7 and "oops" in r.output
        r = await sb.exec("echo begin; sleep 100", timeout=1)
        assert r.timed_out and "begin" in r.output


async def test_sixteen_concurrent_sandboxes_do_independent_work(bash_image, backend):
    async def work(i: int) -> str:
        async with Sandbox(bash_image, backend=backend, cmd=SLEEPER) as sb:
            sh = await sb.shell()
            await sh.run(f"mkdir -p /w && cd /w && echo {i} > mine && export N={i}")
            return (await sh.run("cat mine; echo $N; ls /w | wc -l")).output

    outputs = await asyncio.gather(*(work(i) for i in range(16)))
    assert outputs == [f"{i}\n{i}\n1\n" for i in range(16)]
    assert containers_of_run(RUN_ID, backend) == []


async def test_cancelling_mid_command_leaves_no_container(bash_image, backend):
    started = asyncio.Event()

    async def episode() -> None:
        async with Sandbox(bash_image, backend=backend, cmd=SLEEPER) as sb:
            sh = await sb.shell()
            started.set()
            await sh.run("sleep 100", timeout=200)

    task = asyncio.create_task(episode())
    async with asyncio.timeout(30):
        await started.wait()
    await asyncio.sleep(0.3)
    assert len(containers_of_run(RUN_ID, backend)) == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert containers_of_run(RUN_ID, backend) == []


def test_sigkilled_holder_leaves_containers_that_cleanup_removes(bash_image, engine):
    run_id = "killed-" + uuid.uuid4().hex[:8]
    child = textwrap.dedent(
        f"""
        import asyncio
        from intercode_agents.sandbox import Sandbox
        async def main():
            boxes = [await Sandbox({bash_image!r}, cmd=["sleep", "infinity"]).start() for _ in range(2)]
            print("ready", flush=True)
            await asyncio.sleep(600)
        asyncio.run(main())
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", child],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "INTERCODE_AGENTS_RUN_ID": run_id, "INTERCODE_BACKEND": engine.spec},
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        assert len(containers_of_run(run_id, engine.backend)) == 2
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
        assert len(containers_of_run(run_id, engine.backend)) == 2  # SIGKILL leaves them behind
        removed = cleanup_containers(backends=[engine.backend])
        assert removed >= 2
        assert containers_of_run(run_id, engine.backend) == []
    finally:
        proc.kill()


def test_sigterm_removes_the_containers_of_a_running_process(bash_image, engine):
    run_id = "termed-" + uuid.uuid4().hex[:8]
    child = textwrap.dedent(
        f"""
        import asyncio
        from intercode_agents.sandbox import Sandbox, install_signal_handlers
        async def main():
            async with Sandbox({bash_image!r}, cmd=["sleep", "infinity"]) as sb:
                print("ready", flush=True)
                await (await sb.shell()).run("sleep 600", timeout=700)
        install_signal_handlers()
        try:
            asyncio.run(main())
        except KeyboardInterrupt:
            print("interrupted", flush=True)
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", child],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "INTERCODE_AGENTS_RUN_ID": run_id, "INTERCODE_BACKEND": engine.spec},
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    proc.send_signal(signal.SIGTERM)
    proc.wait(60)
    assert containers_of_run(run_id, engine.backend) == []


def test_engine_unreachable_gives_a_specific_error():
    code = textwrap.dedent(
        """
        import asyncio
        from intercode_agents.sandbox import Sandbox
        from intercode_agents.errors import EngineUnavailable
        async def main():
            try:
                await Sandbox("intercode-agents/bash:latest").start()
            except EngineUnavailable as exc:
                print("EngineUnavailable:", exc)
        asyncio.run(main())
        """
    )
    for host in ("unix:///tmp/no-engine-here.sock", "tcp://127.0.0.1:1"):
        out = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            env={**os.environ, "DOCKER_HOST": host},
            timeout=60,
        )
        assert out.stdout.startswith("EngineUnavailable:"), out.stdout + out.stderr
        assert "dockerd" in out.stdout
        assert "Traceback" not in out.stderr


async def test_missing_image_says_how_to_build_it(backend):
    with pytest.raises(ImageMissing, match="intercode-agents images build"):
        await Sandbox(
            "intercode-agents/not-built-" + uuid.uuid4().hex[:6] + ":latest", backend=backend
        ).start()

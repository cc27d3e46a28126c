"""The budgets the kernel counts per host user or per host against a sysctl cannot be taken from one
sandbox by another.

Every sandbox's root is the engine host's root, and the kernel counts inotify instances and pipe
pages per user, and AIO events per host. A sandbox that took the host's default budget of each left
every other one, and the harness's own process, no inotify instance and no AIO context, and the
other sandboxes two-page pipes. The host budgets
are now out of reach (``scripts/run.sh`` raises them), so what bounds a sandbox is its own memory
limit (see ``intercode_agents/sandbox/host_limits.py`` for the budgets still shared).
"""

from __future__ import annotations

import ast
import asyncio
import ctypes
import fcntl
import json
import os

from intercode_agents.sandbox import Sandbox, host_limits

F_GETPIPE_SZ = 1032

# Takes more than the host's default budget of each, holds it, and says so.
HOLDER = """
import ctypes, fcntl, os, time
libc = ctypes.CDLL(None, use_errno=True)
held = {"inotify": 0, "pipe_pages": 0}
for _ in range(1000):
    if libc.inotify_init() >= 0:
        held["inotify"] += 1
pipes = [os.pipe() for _ in range(100)]
for r, w in pipes:
    try:
        held["pipe_pages"] += fcntl.fcntl(w, 1031, 1 << 20) // 4096
    except OSError:
        held["pipe_pages"] += 16
pipes += [os.pipe() for _ in range(200)]
held["aio_events"] = 0
for _ in range(20):
    ctx = ctypes.c_ulong(0)
    if libc.syscall(206, 4096, ctypes.byref(ctx)) == 0:  # io_setup
        held["aio_events"] += 4096
print("holding", held, flush=True)
time.sleep(600)
"""

# What a process of another sandbox can still have, as JSON.
CHECKER = """
import ctypes, fcntl, json, os
libc = ctypes.CDLL(None, use_errno=True)
r, w = os.pipe()
ctx = ctypes.c_ulong(0)
aio = libc.syscall(206, 128, ctypes.byref(ctx)) == 0
print(json.dumps({"inotify": libc.inotify_init() >= 0, "pipe_bytes": fcntl.fcntl(w, 1032), "aio": aio}))
"""


async def test_a_sandbox_holding_more_than_the_hosts_default_budgets_leaves_the_others_theirs(bash_image):
    assert not host_limits.shortfalls(), (
        "raise the host's budgets first: python -m intercode_agents.sandbox.host_limits --raise"
    )
    async with Sandbox(bash_image) as holder, Sandbox(bash_image) as other:
        started = 'python3 -c "$0" > /tmp/held.log 2>&1 &'
        await holder.exec(["sh", "-c", started, HOLDER])
        for _ in range(300):
            log = (await holder.exec("cat /tmp/held.log")).output
            if "holding" in log or "Error" in log:
                break
            await asyncio.sleep(0.1)
        assert "holding" in log, log
        held = ast.literal_eval(log.split("holding", 1)[1].strip())
        seen = json.loads((await other.exec(["python3", "-c", CHECKER])).output)
        assert seen == {"inotify": True, "pipe_bytes": 65536, "aio": True}, held
        assert held["inotify"] > 128 and held["pipe_pages"] > 16384, held  # more than the defaults
        assert held["aio_events"] > 65536, held

        # and the harness's own process, a process of the same host
        libc = ctypes.CDLL(None, use_errno=True)
        fd = libc.inotify_init()
        assert fd >= 0, os.strerror(ctypes.get_errno())
        os.close(fd)
        r, w = os.pipe()
        assert fcntl.fcntl(w, F_GETPIPE_SZ) == 65536
        os.close(r), os.close(w)
        ctx = ctypes.c_ulong(0)
        assert libc.syscall(206, 128, ctypes.byref(ctx)) == 0, os.strerror(ctypes.get_errno())  # io_setup
        libc.syscall(207, ctx)  # io_destroy


def test_the_budget_check_names_what_falls_short_and_raising_sets_it(tmp_path):
    values = {
        "fs/inotify/max_user_instances": "128",
        "fs/inotify/max_user_watches": "2147483647",
        "fs/epoll/max_user_watches": "5491333",
        "fs/pipe-user-pages-soft": "16384",
        "fs/file-max": "2466097",
        "kernel/pid_max": "4194304",
    }
    for path, value in values.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(value + "\n")
    assert host_limits.shortfalls(tmp_path) == [
        "fs.inotify.max_user_instances = 128 (want 2147483647)",
        "fs.epoll.max_user_watches = 5491333 (want 2147483647)",
        "fs.pipe-user-pages-soft = 16384 (want 0)",
        f"fs.file-max = 2466097 (want {2**63 - 1})",
    ]  # (fs.aio-max-nr is missing here: a kernel without a budget has nothing to share)
    assert len(host_limits.raise_limits(tmp_path)) == 4
    assert host_limits.shortfalls(tmp_path) == []
    assert (tmp_path / "fs/pipe-user-pages-soft").read_text() == "0\n"
    assert (tmp_path / "fs/inotify/max_user_watches").read_text() == "2147483647\n"  # left as it was

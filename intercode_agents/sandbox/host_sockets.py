"""A helper's unix socket in a sandbox, reached from the engine's host: requests without the engine.

A byte over an engine's exec stream passes through the engine and the container's shim both ways.
On a 2-core machine a request and its answer cost about 0.75 ms of CPU that way against 0.13 ms
over a unix socket, one request at a time to an echo helper; with 8 SQL helpers busy at once
(``SELECT 1``, ``benchmarks/bench_sql_requests.py``), 0.55-0.7 ms against 0.3 ms. So where the
sandbox's processes are this host's (the local engine's fast paths), a helper that is asked to
listens on a unix socket in the sandbox, and the harness connects to it through the helper's own
root, ``/proc/<host pid>/root``.

A path inside the sandbox resolves through whatever the sandbox put there: an absolute symbolic
link on the way would be followed on this host. So the connection is only kept when the process
at its other end, as the kernel reports it (``SO_PEERCRED``, the process that listened), is the
helper itself; anything else, whatever it is, gets no byte and the helper keeps its stream.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterable

from intercode_agents.sandbox.contract import HostUnreadable, Proc

_UCRED = struct.Struct("3i")  # pid, uid, gid
_SUN_PATH_MAX = 107  # sockaddr_un's path, less its NUL


def connect(processes: Iterable[Proc], pid: int, path: str) -> socket.socket:
    """A connected, non-blocking socket to what the sandbox process ``pid`` listens on at ``path``;
    HostUnreadable when it cannot be reached or the listener is not that process."""
    helper = next((p for p in processes if p.pid == pid), None)
    if helper is None:
        raise HostUnreadable(f"no process {pid} in the sandbox")
    address = f"/proc/{helper.host_pid}/root/{path.lstrip('/')}"
    if not path.startswith("/") or len(address.encode()) > _SUN_PATH_MAX:
        raise HostUnreadable(f"cannot address {path!r} from this host")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    try:
        sock.settimeout(2.0)
        sock.connect(address)
        peer, _, _ = _UCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size))
        if peer != helper.host_pid:
            raise HostUnreadable(f"{path!r} is not the socket of process {pid} (its listener is PID {peer})")
        sock.setblocking(False)
    except BaseException as exc:
        sock.close()
        if isinstance(exc, OSError):
            raise HostUnreadable(f"cannot connect to {path!r}: {exc}") from exc
        raise
    return sock

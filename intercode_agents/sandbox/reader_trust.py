"""Whether a read-only command run inside a sandbox can answer for the sandbox's files.

Where the engine's host cannot read a container's files (a remote engine, Podman), the slow paths
run a script inside the sandbox (:data:`~intercode_agents.sandbox.path_states.PROBE_SCRIPT`, the
mount listing, Podman's root listing) with the sandbox's own ``bash``, coreutils and findutils. An
agent is root in its sandbox and could replace them (a ``md5sum`` that prints the gold's digests, a
``find`` that hides a change, a ``/etc/ld.so.preload``) to be scored on what it did not do. So before
and after such a script the sandbox layer asks the engine itself, which reads the container's layer
from outside, for its change list: anything changed where those programs, their libraries or the
loader's configuration live makes :class:`~intercode_agents.errors.SandboxTampered` instead of an
answer. The episode is then scored as one whose agent broke its sandbox (0, with the reason).

An engine that cannot give its change list (Podman's fails once a folder replaced a file) cannot
vouch for the programs either: that is a :class:`~intercode_agents.errors.SessionDied`, a harness
fault (the episode is an ``env_error``, never scored), not the agent's.
"""

from __future__ import annotations

from collections.abc import Iterable

from intercode_agents.sandbox.contract import Change

# The folders the scripts' programs (found on the image's PATH), their libraries and the loader
# come from, and the loader's own configuration files.
TOOL_ROOTS: tuple[str, ...] = (
    "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
    "/usr/bin", "/usr/sbin", "/usr/lib", "/usr/lib32", "/usr/lib64", "/usr/libx32", "/usr/libexec",
    "/usr/local/bin", "/usr/local/sbin", "/usr/local/lib",
    "/etc/ld.so.preload", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
)  # fmt: skip


# What an engine itself adds there when the sandbox starts: Docker's init, bind-mounted at
# /sbin/docker-init (/usr/sbin on a merged-/usr image), and the folder above it. That folder is not
# empty in any image, so replacing it would list its content as deleted too.
ENGINE_ADDED: frozenset[Change] = frozenset(
    {
        Change("/sbin/docker-init", "A"), Change("/usr/sbin/docker-init", "A"),
        Change("/sbin", "C"), Change("/usr/sbin", "C"),
    }
)  # fmt: skip


def touched(changes: Iterable[Change]) -> list[str]:
    """The paths of ``changes`` (an engine's change list) at or below one of
    :data:`TOOL_ROOTS`, but for what the engine adds there itself."""
    return sorted(
        change.path
        for change in changes
        if change not in ENGINE_ADDED
        and any(change.path == root or change.path.startswith(root + "/") for root in TOOL_ROOTS)
    )

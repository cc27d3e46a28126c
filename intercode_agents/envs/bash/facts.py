"""What the Bash reward needs to know about the gold and the image, cached per process.

A gold command's effect on a given image is a fact: its output, its change list, and the digests of
the paths it added or changed. So is the digest of any path in the pristine image. Computing them
once per (image, gold) instead of once per episode saves a container, an exec and a diff on every
episode, and lets Try Again re-score each turn with one diff and one probe of the agent's sandbox.

The gold side's digest of any path follows from those facts: a path the gold added or changed has the
gold's digest; a path it deleted, or one below a folder it added or deleted that it did not list, is
missing; any other path is as in the pristine image.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

from intercode_agents.envs.bash.changes import ProbeRequest
from intercode_agents.errors import IntercodeError
from intercode_agents.sandbox import Change, PathState, Sandbox
from intercode_agents.sandbox.path_states import MISSING

MAX_CACHED_GOLD_PATHS = 400  # a gold that changes more than this keeps the slow, uncached path


@dataclass(frozen=True)
class GoldFacts:
    output: str | None  # None: the gold did not finish
    changes: tuple[Change, ...]
    digests: dict[str, PathState]  # deep digests of every path the gold added or changed

    def derive(self, path: str, deep: bool, base: dict[tuple[str, bool], PathState]) -> PathState | None:
        """The gold side's digest of ``path``, or None when it must come from ``base`` (the image)."""
        for change in self.changes:
            if change.path == path:
                return MISSING if change.kind == "D" else shallow(self.digests[path], deep)
        for change in self.changes:
            if change.kind in ("A", "D") and path.startswith(change.path.rstrip("/") + "/"):
                return MISSING  # below a folder the gold added (all its content is listed) or deleted
        return base.get((path, deep))


def shallow(digest: PathState, deep: bool) -> PathState:
    """A deep digest as the probe would report it in ``deep`` or shallow mode."""
    if deep or digest.kind != "dir":
        return digest
    return dataclasses.replace(digest, md5=None, files=0)


async def probe(sb: Sandbox, request: ProbeRequest) -> dict[str, PathState]:
    """Digest the requested paths (read from the engine's host where it can be: the sandbox's own
    tools, which an agent may have replaced, take no part)."""
    return await sb.path_states(request.deep, request.shallow)


async def changes_of(sb: Sandbox) -> tuple[Change, ...]:
    return tuple(await sb.diff())


async def run_gold(sb: Sandbox, gold: str, timeout: float) -> str | None:
    """Run ``gold`` the way agent actions run (a fresh shell session); None when it did not finish.
    ``sb`` must be one no untrusted code ever ran in: what the gold sees becomes a stored fact."""
    if sb.untrusted:
        raise IntercodeError("a gold never runs in a sandbox that was lent to untrusted code")
    shell = await sb.shell()
    try:
        result = await shell.run(gold, timeout=timeout)
    finally:
        await sb.forget(shell)
    return None if result.timed_out else result.output


async def gold_facts(sb: Sandbox, gold: str, timeout: float) -> GoldFacts | None:
    """Run ``gold`` in the pristine ``sb`` and collect its facts (None when too many paths changed)."""
    output = await run_gold(sb, gold, timeout)
    changes = await changes_of(sb)
    kept = [c.path for c in changes if c.kind != "D"]
    if len(kept) > MAX_CACHED_GOLD_PATHS:
        return None
    digests = await probe(sb, ProbeRequest(deep=tuple(kept)))
    for path in kept:
        digests.setdefault(path, MISSING)  # vanished between diff and probe (a race in the gold itself)
    return GoldFacts(output, changes, digests)


def split_request(request: ProbeRequest) -> Iterable[tuple[str, bool]]:
    yield from ((p, True) for p in request.deep)
    yield from ((p, False) for p in request.shallow)

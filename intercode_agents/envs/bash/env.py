"""The Bash env: NL2Bash tasks on prepared file systems, scored by file-system changes and output.

Actions run in a persistent bash session exactly as written; with ``execution="paper"`` each runs
as the original InterCode ran it, the gold too (:mod:`intercode_agents.envs.bash.paper`). At
scoring time the agent's sandbox is compared with the gold's effect on a pristine sandbox of the
same image: Docker's change lists, digests of the changed paths, and the TF-IDF similarity of the
outputs (see
:mod:`intercode_agents.envs.bash.reward`). The gold's effect and the image's digests are facts cached
per process (:mod:`intercode_agents.envs.bash.facts`). A score below 1 is checked against a fresh
gold run in a sandbox of its own (as the original ran the gold at every submit), so a gold whose
output drifts (a date, a disk usage figure) never costs the agent; a gold too large to cache always
runs fresh. The gold's facts are computed from the episode's start on, in a sandbox of their own
while the agent works, so a submit seldom waits for them. A task whose gold cannot do here what it did
in the original (it downloads or resolves names, and the sandboxes have no network:
:mod:`intercode_agents.datasets.gold_caveats`) is scored corrupt, in both reward modes, without running
its gold.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from intercode_agents.datasets import Task
from intercode_agents.datasets.gold_caveats import corrupt_reason
from intercode_agents.datasets.sources import TaskSource
from intercode_agents.datasets.task import TaskDetails
from intercode_agents.envs.base import ActionResult
from intercode_agents.envs.bash.changes import ProbeRequest, paths_to_probe
from intercode_agents.envs.bash.fact_store import fact_store
from intercode_agents.envs.bash.facts import (
    MISSING,
    GoldFacts,
    changes_of,
    gold_facts,
    probe,
    run_gold,
    split_request,
)
from intercode_agents.envs.bash.guard import bash_flags
from intercode_agents.envs.bash.paper import (
    EXECUTION_MODES,
    PaperShell,
    gold_command,
    paper_image,
    paper_shell,
)
from intercode_agents.envs.bash.reward import AGENT_PARTS, BashSide, bash_reward
from intercode_agents.envs.pooled_env import PooledEnv, timeout_note
from intercode_agents.envs.steps import GuardFlag
from intercode_agents.reward import RewardResult
from intercode_agents.sandbox import PathState, Sandbox, SandboxPool, ShellSession


class BashEnv(PooledEnv):
    name = "bash"
    language = "bash"
    default_image = "bash"
    execution_modes = EXECUTION_MODES
    task_dirs = ("/testbed",)
    guard_note = (
        "A guard protects the task files: before a command that may destroy them it saves them, and it "
        "restores them when such a command fails or empties a file. Reply with the action `rollback` to "
        "restore the files as they were before the last such command (`rollback start`: as at the start)."
    )

    @classmethod
    def guard_flags(cls, action: str, task_dirs: tuple[str, ...]) -> Sequence[GuardFlag]:
        return bash_flags(action, task_dirs)

    agent_parts = AGENT_PARTS

    @classmethod
    def task_details(
        cls, record: dict[str, Any], source: TaskSource, index: int, root: Path | None
    ) -> TaskDetails:
        """A Bash task on a prepared file system (its split's ``fs_script`` option) is grouped by that
        file system, and its meta names the script; other splits get the default details."""
        script = source.options.get("fs_script")
        if not script:
            return super().task_details(record, source, index, root)
        meta = {"source": str(source.options.get("source", source.env))}
        meta["fs_script"] = str(source.resolve(str(script), root))
        return TaskDetails(group={"fs": source.split}, meta=meta)

    def __init__(self, *, facts_cache: str = "disk", gold_timeout: float = 60.0, **kw: Any) -> None:
        super().__init__(**kw)
        self.facts = fact_store(facts_cache)
        self.gold_timeout = gold_timeout  # a gold that runs longer makes its task corrupt, once and for all
        self.shell: ShellSession | None = None
        self.paper: PaperShell | None = None  # execution="paper": each action as the original ran it
        self._gold_ahead: tuple[Task, asyncio.Future[GoldFacts | None]] | None = None  # started at reset
        self._golds: set[asyncio.Future[GoldFacts | None]] = set()  # gold runs under way

    async def _start_shell(self, sb: Sandbox, workdir: str | None = None, image: str = "bash") -> None:
        if self.execution == "paper":
            self.paper = PaperShell(sb, workdir or "/", shell=paper_shell(image))
        else:
            self.shell = await sb.shell(workdir=workdir)

    @classmethod
    def image_for(cls, image: str, execution: str) -> str:
        """Paper execution runs on the image's paper variant (the agent's sandbox and the gold's)."""
        return paper_image(image) if execution == "paper" else image

    async def pool(self, image: str) -> SandboxPool:
        return await super().pool(self.image_for(image, self.execution))

    async def _prepare(self, task: Task) -> None:
        await self._start_shell(await self.take_sandbox(task.image), image=task.image)
        self._gold_ahead = None  # (a previous episode's gold finishes on its own: its facts are kept)
        declared_corrupt = corrupt_reason(task.id) is not None  # (scored without its gold)
        if not declared_corrupt and self.facts.facts(self._image_key(task), self.gold(task)) is None:
            ahead = asyncio.ensure_future(self._facts(task))
            ahead.add_done_callback(lambda done: done.cancelled() or done.exception())  # read when scored
            self._golds.add(ahead)
            ahead.add_done_callback(self._golds.discard)
            self._gold_ahead = (task, ahead)

    async def on_tool_mode(self) -> None:
        assert self.sandbox is not None
        await self._start_shell(self.sandbox)

    def gold(self, task: Task) -> str:
        """The command that runs the task's gold: in paper mode, as the original ran it."""
        if self.execution == "paper":
            return gold_command(task.gold, shell=paper_shell(task.image))
        return task.gold

    async def _execute(self, action: str) -> ActionResult:
        await self.ensure_tool_mode()
        if self.paper is not None:
            return await self.paper.run(action)
        assert self.shell is not None
        r = await self.shell.run(action, timeout=self.action_timeout)
        return ActionResult(
            observation=r.output + timeout_note(r, self.action_timeout),
            exit_code=r.exit_code,
            errored=r.exit_code != 0,
            timed_out=r.timed_out,
            output_truncated=r.truncated,
            duration_s=r.duration_s,
        )

    def _image_key(self, task: Task) -> str:
        """The image the current episode runs on (its ID, so a rebuilt image is a new key)."""
        return (self.sandbox.image_id if self.sandbox else None) or task.image

    async def gold_facts(self) -> GoldFacts | None:
        """The current task's gold facts (its output, changes and their digests) on its image; None
        when the gold changes too much to cache (exporters compute the gold's side with it)."""
        return await self._facts(self._require_task())

    async def _facts(self, task: Task) -> GoldFacts | None:
        """The gold's facts on this task's image (computed once, then from the store)."""
        image = self._image_key(task)
        facts = self.facts.facts(image, self.gold(task))
        if facts is None:
            sb, pool = await self.borrow(task.image, trusted=True)
            try:
                facts = await gold_facts(sb, self.gold(task), self.gold_timeout)
            finally:
                await pool.release(sb)  # recycled for golds only if verified pristine
            if facts is not None:
                self.facts.put_facts(image, self.gold(task), facts)
        return facts

    async def _image_digests(
        self, task: Task, wanted: list[tuple[str, bool]]
    ) -> dict[tuple[str, bool], PathState]:
        """Digests of the ``wanted`` (path, deep) pairs in the pristine image (probed once each)."""
        image = self._image_key(task)
        known = self.facts.digests(image)
        missing = [w for w in wanted if w not in known]
        if missing:
            sb, pool = await self.borrow(task.image, trusted=True)
            try:
                request = ProbeRequest(
                    deep=tuple(p for p, d in missing if d), shallow=tuple(p for p, d in missing if not d)
                )
                found = await probe(sb, request)
            finally:
                await pool.release(sb)
            self.facts.put_digests(image, {(p, deep): found.get(p, MISSING) for p, deep in missing})
        return known

    async def _score(self, submission: str) -> RewardResult:
        task = self._require_task()
        assert self.sandbox is not None
        if reason := corrupt_reason(task.id):  # a declared caveat: the gold cannot do here what it did
            parts: dict[str, Any] = {"corrupt": True, "corrupt_reason": reason}
            return RewardResult(0.0, parts, corrupt=True, note=f"the task cannot be scored here: {reason}")
        if self._gold_ahead is not None and self._gold_ahead[0] is task:
            facts = await asyncio.shield(self._gold_ahead[1])
        else:
            facts = await self._facts(task)
        if facts is None:
            return await self._score_with_live_gold(task, submission)
        cached = await self._score_with_facts(task, facts, submission)
        if cached.reward >= 1.0 or facts.output is None:
            return cached  # (a gold that did not finish once is never run again: the task is corrupt)
        return await self._score_with_live_gold(task, submission)

    async def _score_with_facts(self, task: Task, facts: GoldFacts, submission: str) -> RewardResult:
        assert self.sandbox is not None
        agent_changes = await changes_of(self.sandbox)
        request = paths_to_probe(agent_changes, facts.changes, self.reward_mode)
        wanted = list(split_request(request))
        agent_digests = await probe(self.sandbox, request)
        base = await self._image_digests(task, wanted) if wanted else {}
        gold_digests = {p: facts.derive(p, deep, base) or MISSING for p, deep in wanted}
        base_digests = {p: base.get((p, deep), MISSING) for p, deep in wanted}
        return bash_reward(
            BashSide(agent_changes, agent_digests, submission),
            BashSide(facts.changes, gold_digests, facts.output),
            self.reward_mode,
            base_digests=base_digests,
        )

    async def _score_with_live_gold(self, task: Task, submission: str) -> RewardResult:
        """For a gold that changes too much to cache: run it in a sandbox of its own and probe both."""
        assert self.sandbox is not None
        sb, pool = await self.borrow(task.image, trusted=True)
        try:
            gold_output = await run_gold(sb, self.gold(task), self.gold_timeout)
            gold_changes, agent_changes = await changes_of(sb), await changes_of(self.sandbox)
            request = paths_to_probe(agent_changes, gold_changes, self.reward_mode)
            agent_digests, gold_digests = await asyncio.gather(
                probe(self.sandbox, request), probe(sb, request)
            )
        finally:
            await pool.release(sb)
        if gold_output is None:  # never again, in this process or a later one
            self.facts.put_facts(self._image_key(task), self.gold(task), GoldFacts(None, gold_changes, {}))
        wanted = list(split_request(request))
        base = await self._image_digests(task, wanted) if wanted else {}
        return bash_reward(
            BashSide(agent_changes, agent_digests, submission),
            BashSide(gold_changes, gold_digests, gold_output),
            self.reward_mode,
            base_digests={p: base.get((p, deep), MISSING) for p, deep in wanted},
        )

    async def close(self) -> None:
        self.shell = self.paper = None
        self._gold_ahead = None
        golds, self._golds = list(self._golds), set()
        for gold in golds:
            gold.cancel()
        await asyncio.gather(*golds, return_exceptions=True)
        await super().close()

"""The CTF env: picoCTF puzzles in a tool-rich bash sandbox, scored by the submitted flag.

Reset copies the task's assets (never its ``solution/`` folder) into the working directory of a
pristine sandbox; the agent works in a persistent bash session and ends with ``submit <flag>``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from intercode_agents.datasets import Task
from intercode_agents.datasets.sources import TaskSource
from intercode_agents.datasets.task import TaskDetails
from intercode_agents.envs.bash.env import BashEnv
from intercode_agents.envs.ctf.reward import AGENT_PARTS, ctf_reward
from intercode_agents.envs.ctf.tasks import ctf_asset_files, ctf_unavailable, remote_service
from intercode_agents.errors import DatasetError, UnknownTask
from intercode_agents.reward import RewardResult

WORKDIR = "/ctf"
_FLAGS = (re.compile(r"picoCTF\{[^{}\s]+\}"), re.compile(r"[A-Za-z0-9_]+\{[^{}\s]+\}"))


class CtfEnv(BashEnv):
    name = "ctf"
    language = "ctf"
    default_image = "ctf"
    submit_takes_argument = True
    task_dirs = (WORKDIR,)
    guard_note = (
        "A guard saves the task files under /ctf before a command that may destroy them. The action "
        "`rollback` restores them as they were before the last such command (`rollback start`: as at the "
        "start)."
    )
    agent_parts = AGENT_PARTS
    submit_description = "Finish the task: submit the flag you found (for example picoCTF{...})."
    answer_description = "The flag you found."

    @classmethod
    def task_details(
        cls, record: dict[str, Any], source: TaskSource, index: int, root: Path | None
    ) -> TaskDetails:
        """A CTF task names its asset folder, its tags (the first is its metric group) and, when it
        cannot run here (an asset or the network it needs is missing), why."""
        if "task_id" not in record:
            raise DatasetError(f"task #{index} of split {source.env}/{source.split} has no 'task_id' field")
        task_id = record["task_id"]
        tags = list(record.get("tags", []))
        asset_dir = source.resolve(str(source.options.get("assets", "task_assets")), root) / str(task_id)
        meta: dict[str, Any] = {
            "task_id": task_id,
            "tags": tags,
            "source": record.get("source", ""),
            "asset_dir": str(asset_dir),
        }
        for optional in ("hint", "setup"):
            if optional in record:
                meta[optional] = record[optional]
        if host := remote_service(str(record.get("query", ""))):
            meta["remote_service"] = host  # the original ran with network access; informative only
        return TaskDetails(
            group={"tag": tags[0]} if tags else {},
            meta=meta,
            unavailable=ctf_unavailable(record, asset_dir, task_id),
            public={"tags": [str(tag) for tag in tags]} if tags else {},
        )

    def submission_candidate(self, actions: list[str], observations: list[str]) -> str | None:
        """The last flag seen in an observation: picoCTF{...} first, then anything shaped like one."""
        for pattern in _FLAGS:
            flags = [flag for text in observations for flag in pattern.findall(text)]
            if flags:
                return flags[-1]
        return ""

    async def _prepare(self, task: Task) -> None:
        if task.unavailable:
            raise UnknownTask(f"task {task.id} cannot run here: {task.unavailable}")
        sb = await self.take_sandbox(task.image)
        asset_dir = task.meta.get("asset_dir")
        if asset_dir:
            root = Path(asset_dir)
            files = [(p, str(p.relative_to(root))) for p in ctf_asset_files(task)]
            if files:
                await sb.copy_in(files, WORKDIR)
        await self._start_shell(sb, WORKDIR, image=task.image)

    async def _score(self, submission: str) -> RewardResult:
        task = self._require_task()
        return ctf_reward(submission, task.gold, self.reward_mode)

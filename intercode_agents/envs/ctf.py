"""The CTF env: picoCTF puzzles in a tool-rich bash sandbox, scored by the submitted flag.

Reset copies the task's assets (never its ``solution/`` folder) into the working directory of a
pristine sandbox; the agent works in a persistent bash session and ends with ``submit <flag>``.
"""

from __future__ import annotations

from pathlib import Path

from intercode_agents.datasets import Task, ctf_asset_files
from intercode_agents.envs.bash import BashEnv
from intercode_agents.errors import UnknownTask
from intercode_agents.rewards import RewardResult, ctf_reward

WORKDIR = "/ctf"


class CtfEnv(BashEnv):
    name = "ctf"
    language = "ctf"
    default_image = "ctf"
    submit_takes_argument = True
    task_dirs = (WORKDIR,)

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

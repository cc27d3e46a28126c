"""The Bash env, failing on purpose at the action ``explode`` (see faulty.yaml)."""

from __future__ import annotations

from intercode_agents.envs.base import ActionResult
from intercode_agents.envs.bash.env import BashEnv


class FaultyEnv(BashEnv):
    async def _execute(self, action: str) -> ActionResult:
        if action.strip() == "explode":
            raise RuntimeError("the engine went away in the middle of a command")
        return await super()._execute(action)

"""Single shot (architecture A): one action, then the episode is submitted as it stands.

The model answers once; its action runs, nothing comes back to it, and the episode is submitted (for
Python the function it defined, for CTF the last flag-like text the action printed). A reply with no
action, or a bare ``submit``, is submitted as it is. ``max_turns`` is not used.
"""

from __future__ import annotations

from intercode_agents.strategies.base import Strategy
from intercode_agents.strategies.episode import EpisodeRun

ONE_SHOT = "single shot: the one action ran, the episode is submitted as it stands"


class SingleShot(Strategy):
    name = "single_shot"
    templates = ("system", "task")

    async def solve(self, run: EpisodeRun) -> None:
        reply = await run.ask(run.messages())
        result = await run.take_turn(reply)
        if not result.done:
            await run.submit(forced=True, thought=ONE_SHOT)

    def context(self) -> dict[str, object]:
        return super().context() | {"actions": 1}

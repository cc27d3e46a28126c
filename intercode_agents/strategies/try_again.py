"""Try Again: every action is run and scored; the output and the reward go back to the model.

The episode ends when an action reaches reward 1 (it is then submitted, so the env records it), when
the model submits on its own, or when the turns run out (a forced submit).
"""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage

from intercode_agents.strategies.base import Strategy
from intercode_agents.strategies.episode import EpisodeRun, is_full

SOLVED_NOTE = "reward 1 reached: the episode is submitted"


class TryAgain(Strategy):
    name = "try_again"
    templates = ("system", "task", "feedback", "invalid")

    async def solve(self, run: EpisodeRun) -> None:
        history: list[list[AIMessage | HumanMessage]] = []
        while run.turns_left > 0 and not run.done:
            reply = await run.ask(run.messages(history))
            result = await run.take_turn(reply, score=True)
            if result.done:
                return
            if is_full(result.reward):
                await run.submit(forced=True, thought=SOLVED_NOTE)
                return
            feedback = result.feedback
            if not result.from_parser:
                reward = f"{result.reward:g}" if result.reward is not None else "0"
                feedback = run.render("feedback", observation=result.feedback, reward=reward)
            history.append([AIMessage(content=reply.text), HumanMessage(content=feedback)])

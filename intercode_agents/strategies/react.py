"""ReAct: Thought / Action / Observation turns, with a few-shot demo of the env in the system prompt.

``submit`` ends the episode; the last observation before the budget runs out asks the model to
submit, and the base class submits if it still does not.
"""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage

from intercode_agents.strategies.base import Strategy
from intercode_agents.strategies.episode import EpisodeRun


class ReAct(Strategy):
    name = "react"
    templates = ("system", "task", "observation", "last_turn", "invalid")

    async def solve(self, run: EpisodeRun) -> None:
        history: list[list[AIMessage | HumanMessage]] = []
        while run.turns_left > 0 and not run.done:
            reply = await run.ask(run.messages(history))
            result = await run.take_turn(reply)
            if result.done:
                return
            feedback = result.feedback
            if not result.from_parser:
                template = "last_turn" if run.turns_left == 1 else "observation"
                feedback = run.render(template, observation=result.feedback)
            history.append([AIMessage(content=reply.text), HumanMessage(content=feedback)])

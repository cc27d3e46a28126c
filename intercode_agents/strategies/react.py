"""ReAct: Thought / Action / Observation turns, with a few-shot demo of the env in the system prompt.

``submit`` ends the episode; the last observation before the budget runs out asks the model to
submit, and the base class submits if it still does not. With the ``paper`` prompt set it runs the
InterCode paper's own ReAct loop instead (:mod:`~intercode_agents.strategies.paper_loops`).
"""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage

from intercode_agents.strategies.base import Strategy
from intercode_agents.strategies.episode import EpisodeRun
from intercode_agents.strategies.paper_loops import react_loop


class ReAct(Strategy):
    name = "react"
    templates = ("system", "task", "observation", "last_turn", "invalid")
    paper_templates = ("system", "task", "turn", "next", "retry", "invalid")

    async def solve(self, run: EpisodeRun) -> None:
        if self.prompts.style == "paper":
            await react_loop(run)
            return
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

"""Plan & Solve: a numbered plan first, then one action per plan step with each output fed back.

After the plan, the state is scored. At reward 1 the episode is submitted; otherwise an optional
refine phase of ``refine_turns`` scored turns (as in Try Again) follows, and then the submit. The
plan is recorded in ``Trajectory.context["plan"]``. With the ``paper`` prompt set it runs the InterCode
paper's own Plan & Solve loop instead (:mod:`~intercode_agents.strategies.paper_loops`).
"""

from __future__ import annotations

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from pydantic import Field

from intercode_agents.errors import ConfigError
from intercode_agents.strategies.base import Strategy
from intercode_agents.strategies.config import StrategyConfig
from intercode_agents.strategies.episode import EpisodeRun, TurnResult, is_full
from intercode_agents.strategies.paper_loops import plan_solve_loop
from intercode_agents.strategies.parsing import parse_plan

FALLBACK_STEP = "Solve the task."
SOLVED_NOTE = "reward 1 reached: the episode is submitted"


class PlanSolveConfig(StrategyConfig):
    max_plan_steps: int = Field(
        default=6, ge=1, le=20, description="plan steps carried out at most (the paper's loop: all)"
    )
    refine_turns: int = Field(default=3, ge=0, description="scored turns after the plan if it failed")
    run_replies_as_written: bool = Field(
        default=False,
        description="with the paper's prompts: run each step's reply as written, fences and prose "
        "included, as the paper's Bash fs_1 Plan & Solve run did",
    )


class PlanSolve(Strategy):
    name = "plan_solve"
    config_model = PlanSolveConfig
    config: PlanSolveConfig
    templates = ("system", "task", "first_step", "next_step", "refine", "refine_feedback", "invalid")
    paper_templates = (*templates, "execute")

    def __init__(self, config: StrategyConfig | None = None, **settings: object) -> None:
        super().__init__(config, **settings)
        if self.config.run_replies_as_written and self.prompts.style != "paper":
            raise ConfigError(
                "run_replies_as_written reproduces a run of the paper: use it with prompts=paper"
            )

    def context(self) -> dict[str, object]:
        return super().context() | {"refine_turns": self.config.refine_turns}

    async def solve(self, run: EpisodeRun) -> None:
        if self.prompts.style == "paper":
            await plan_solve_loop(
                run, refine_turns=self.config.refine_turns, as_written=self.config.run_replies_as_written
            )
            return
        run.values["max_plan_steps"] = self.config.max_plan_steps
        plan_reply = await run.ask(run.messages())
        steps = parse_plan(plan_reply.text)[: min(self.config.max_plan_steps, self.config.max_turns)]
        run.trajectory.context["plan"] = steps
        run.trajectory.context["plan_text"] = plan_reply.text
        pinned = [AIMessage(content=plan_reply.text)]
        history: list[list[BaseMessage]] = []
        last: TurnResult | None = None
        for number, step in enumerate(steps or [FALLBACK_STEP], start=1):
            if run.turns_left == 0:
                return
            if last is None:
                prompt = run.render("first_step", step_number=number, step=step)
            else:
                prompt = run.render("next_step", observation=last.feedback, step_number=number, step=step)
            reply = await run.ask([*run.messages(history, pinned=pinned), HumanMessage(content=prompt)])
            last = await run.take_turn(reply)
            last.step.thought = last.step.thought or f"plan step {number}: {step}"
            history.append([HumanMessage(content=prompt), AIMessage(content=reply.text)])
            if last.done:
                return
        if last is not None and self.config.refine_turns:
            await self._refine(run, last, history, pinned)

    async def _refine(
        self, run: EpisodeRun, last: TurnResult, history: list[list[BaseMessage]], pinned: list[AIMessage]
    ) -> None:
        reward = await run.evaluate()
        if is_full(reward):
            await run.submit(forced=True, thought=SOLVED_NOTE)
            return
        budget = min(self.config.refine_turns, run.turns_left)
        prompt = run.render("refine", observation=last.feedback, reward=f"{reward:g}", turns_left=budget)
        for _ in range(self.config.refine_turns):
            if run.turns_left == 0:
                return
            reply = await run.ask([*run.messages(history, pinned=pinned), HumanMessage(content=prompt)])
            result = await run.take_turn(reply, score=True)
            history.append([HumanMessage(content=prompt), AIMessage(content=reply.text)])
            if result.done:
                return
            if is_full(result.reward):
                await run.submit(forced=True, thought=SOLVED_NOTE)
                return
            prompt = result.feedback
            if not result.from_parser:
                shown = f"{result.reward:g}" if result.reward is not None else "0"
                prompt = run.render("refine_feedback", observation=result.feedback, reward=shown)

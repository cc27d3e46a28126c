"""The InterCode paper's ReAct and Plan & Solve loops, run by ``react`` and ``plan_solve`` with the
``paper`` prompt set (``prompts/paper/``, ``--set prompts=paper``).

They follow the original's ``experiments/eval_react.py`` and ``eval_plan_solve.py`` (princeton-nlp/intercode
at commit c3e46d82) in what the model sees and in what runs, so that a new model's run compares with
the paper's Table 4 (how replies are read: :mod:`~intercode_agents.strategies.paper_parsing`):

- **ReAct.** The original continued one growing text with a completion model; here that text goes to
  the chat model as one message each turn: instructions and demos, ``Question: ...``, the past turns
  (``Thought N: / Action N: / Observation N:``), and ``Thought N:``. A reply without exactly one
  ``Action N:`` line is followed by a second call for the action alone. A reply without code gets the
  original's error message as its observation. Observations are cut to 350 characters (SQL: 25 rows).
  After ``max_turns`` turns the episode is submitted, as the original did.
- **Plan & Solve.** A system message with the plan demos and the question ask for a plan; its numbered
  steps are carried out one reply each, after a second system message, each step's prompt showing the
  last observation (cut to 1000 characters; SQL: 25 rows), the plan itself never shown again (as in the
  original). A reply without code gets the original's retry message. The state is scored after every
  step that ran; the original went on to the end of the plan and counted the best score, so here the
  episode is submitted as soon as a step reaches reward 1 (the same success, fewer steps). With
  ``refine_turns``, the original's refine phase follows a plan that did not reach 1.

Only Bash and SQL have them, as in the paper. A submit among the actions ends the episode here (the
original's Plan & Solve loop went on with the plan), and the env refuses an empty command (the
original ran it and saw no output).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from intercode_agents.envs.base import Env
from intercode_agents.envs.steps import Submit, read_action
from intercode_agents.errors import ConfigError
from intercode_agents.models.calls import ModelReply
from intercode_agents.strategies.episode import EpisodeRun, is_full
from intercode_agents.strategies.paper_parsing import (
    plan_steps,
    react_code,
    react_split,
    retry_action,
    step_code,
)

PAPER_ENVS = ("bash", "sql")
ROWS_SHOWN = 25  # the original showed the first 25 rows of a result
REACT_CHARS, STEP_CHARS, REFINE_CHARS = 350, 1000, 250  # and cut other observations to these lengths
SOLVED_NOTE = "reward 1 reached: the episode is submitted"


@dataclass(frozen=True)
class PaperTurn:
    """One reply carried out: the observation as the env gave it (or the message for a reply without
    code), the rows of a SQL result, the reward where the state was scored."""

    observation: str
    rows: list[tuple[Any, ...]] | None = None
    reward: float | None = None
    done: bool = False

    def shown(self, chars: int) -> str:
        """The observation as the original showed it to the model."""
        if self.rows is not None:
            return repr(self.rows[:ROWS_SHOWN]) if len(self.rows) > ROWS_SHOWN else self.observation
        return self.observation[:chars]


def check_paper_env(env: Env) -> None:
    """The paper's loops ran on Bash and SQL only (a ConfigError for other envs)."""
    if env.name not in PAPER_ENVS:
        raise ConfigError(
            f"the paper's ReAct and Plan & Solve loops ran on Bash and SQL only, not on {env.name!r}"
        )


def paper_demo(run: EpisodeRun) -> str:
    """The env's demo as the original placed it (as written, no header)."""
    return run.prompts.demos.get(run.env.name, "") if run.config.demos else ""


async def carry_out(
    run: EpisodeRun,
    text: str,
    is_code: bool,
    *,
    thought: str | None,
    reply: ModelReply,
    score: bool,
    chars: int,
) -> PaperTurn:
    """Run what the paper's parse found in a reply (``text``, code or not), record the step with the
    observation the model will see (cut to ``chars``), and score the state if ``score``."""
    if not is_code:
        result = run.invalid(text, "no code", thought=thought, reply=reply, feedback=run.render("invalid"))
        return PaperTurn(result.feedback)
    if isinstance(read_action(text), Submit):
        result = await run.submit(thought=thought, reply=reply)
        return PaperTurn(result.feedback, reward=result.reward, done=True)
    result = await run.act(text, thought=thought, reply=reply, score=score)
    if result.kind != "action":  # the env refused it
        return PaperTurn(result.feedback)
    rows = getattr(run.env, "last_rows", None)
    turn = PaperTurn(run.observations[-1], rows, result.reward)
    result.step.observation = turn.shown(chars)
    result.step.observation_truncated = result.step.observation != turn.observation
    return turn


# -- ReAct ----------------------------------------------------------------------------------------
async def react_loop(run: EpisodeRun) -> None:
    env_name = run.env.name
    head = run.render("system", demo=paper_demo(run)) + run.render("task")
    past: list[str] = []
    while run.turns_left > 0 and not run.done:
        turn = run.turns_used + 1
        text = head + "".join(past)
        reply = await run.ask([HumanMessage(content=text + run.render("next", turn=turn))])
        thought, action = react_split(reply.text, turn)
        if action is None:
            retry = await run.ask(
                [HumanMessage(content=text + run.render("retry", turn=turn, thought=thought))]
            )
            action = retry_action(retry.text)
            reply = _both(reply, retry)
        code, is_code = react_code(action, env_name)
        result = await carry_out(
            run, code, is_code, thought=thought, reply=reply, score=False, chars=REACT_CHARS
        )
        if result.done:
            return
        shown = result.shown(REACT_CHARS)
        past.append(run.render("turn", turn=turn, thought=thought, action=action, observation=shown))


def _both(first: ModelReply, second: ModelReply) -> ModelReply:
    """The second reply, with the tokens of both calls of the turn."""
    return ModelReply(
        second.message,
        input_tokens=first.input_tokens + second.input_tokens,
        output_tokens=first.output_tokens + second.output_tokens,
        attempts=first.attempts + second.attempts,
    )


# -- Plan & Solve ---------------------------------------------------------------------------------
async def plan_solve_loop(run: EpisodeRun, *, refine_turns: int, as_written: bool) -> None:
    env_name = run.env.name
    question = [
        SystemMessage(content=run.render("system", demo=paper_demo(run))),
        HumanMessage(content=run.render("task")),
    ]
    plan = await run.ask(question)
    steps = plan_steps(plan.text)
    run.trajectory.context["plan"] = steps
    run.trajectory.context["plan_text"] = plan.text
    dialogue: list[BaseMessage] = [*question, SystemMessage(content=run.render("execute"))]
    last: PaperTurn | None = None
    for number, step in enumerate(steps, start=1):
        if run.turns_left == 0:
            return
        if last is None:
            prompt = run.render("first_step", step=step)
        else:
            prompt = run.render("next_step", observation=last.shown(STEP_CHARS), step=step)
        thought = f"plan step {number}: {step}"
        last = await _step(run, dialogue, prompt, env_name, as_written, thought, STEP_CHARS)
        if last.done or await _submitted_if_solved(run, last):
            return
    if last is None or not refine_turns:
        return
    dialogue.append(SystemMessage(content=run.render("refine")))
    for _ in range(refine_turns):
        if run.turns_left == 0:
            return
        prompt = run.render("refine_feedback", observation=last.shown(REFINE_CHARS))
        last = await _step(run, dialogue, prompt, env_name, as_written, "refine", REFINE_CHARS)
        if last.done or await _submitted_if_solved(run, last):
            return


async def _step(
    run: EpisodeRun,
    dialogue: list[BaseMessage],
    prompt: str,
    env_name: str,
    as_written: bool,
    thought: str,
    chars: int,
) -> PaperTurn:
    """One reply to ``prompt``, carried out and scored (its observation will be shown cut to
    ``chars``); the dialogue keeps the prompt and the reply."""
    dialogue.append(HumanMessage(content=prompt))
    reply = await run.ask(list(dialogue))
    dialogue.append(AIMessage(content=reply.text))
    code, is_code = step_code(reply.text, env_name, as_written=as_written)
    return await carry_out(run, code, is_code, thought=thought, reply=reply, score=True, chars=chars)


async def _submitted_if_solved(run: EpisodeRun, turn: PaperTurn) -> bool:
    if not is_full(turn.reward):
        return False
    await run.submit(forced=True, thought=SOLVED_NOTE)
    return True

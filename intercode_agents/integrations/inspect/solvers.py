"""The solvers of the ``intercode`` task: our tool-calling loop on Inspect's model, and the gold.

``intercode_agent`` is our ``tool_calling`` strategy's loop with Inspect's model in place of a
LangChain one: the same system and task prompts, one turn per tool call, a reply with no tool call
answered with the strategy's reminder (and a turn), a call that cannot be read (an unknown tool,
arguments that do not parse) an invalid turn, and once the turns are spent the episode submitted as
it stands (by the scorer, which ends every episode). ``history_turns`` keeps only the last N turns in
what the model is sent (the transcript keeps them all). Tokens and the reply's text go into the
record's steps, as our strategies record them.

``intercode_gold`` plays the env's gold actions (:class:`~.episode.GoldPlay`): no model is called, so
``--model mockllm/model`` (or ``none``) runs it offline.
"""

from __future__ import annotations

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    ModelOutput,
    execute_tools,
    get_model,
)
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import ToolCall, ToolCallError

from intercode_agents.integrations.inspect.episode import AgentPlay, AgentSettings
from intercode_agents.integrations.inspect.tools import current_episode, intercode_tools
from intercode_agents.models.calls import ModelReply
from intercode_agents.strategies.agent_episode import NOT_RUN, describe_call

#: How a record names the strategy of an episode our Inspect solver played.
AGENT_SOLVER = "inspect/tool_calling"


@solver
def intercode_agent(
    turns: int = 10, observation_limit: int = 4000, history_turns: int | None = None
) -> Solver:
    """Our tool-calling loop on Inspect's model (see the module docstring)."""
    settings = AgentSettings(turns=turns, observation_limit=observation_limit, history_turns=history_turns)

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        episode = current_episode()
        model = get_model()
        play = episode.agent(settings, strategy=AGENT_SOLVER, model=str(model), epoch=state.epoch)
        run = play.run
        tools = intercode_tools(
            episode.env, turns=turns, observation_limit=observation_limit, history_turns=history_turns
        )
        names = set(play.tools)
        state.messages = [
            ChatMessageSystem(content=run.render("system")),
            ChatMessageUser(content=run.render("task")),
        ]
        turn_starts: list[int] = []  # where each turn's messages begin in state.messages
        while run.turns_left > 0 and not run.done:
            window = _window(state.messages, turn_starts, history_turns)
            output = await model.generate(window, tools=tools)
            state.output = output
            message = output.message
            turn_starts.append(len(state.messages))
            state.messages.append(message)
            calls = message.tool_calls or []
            readable = [c for c in calls if c.parse_error is None and c.function in names]
            usage = output.usage
            tokens = (usage.input_tokens, usage.output_tokens) if usage is not None else (0, 0)
            reply = play.replied(
                message.text,
                [{"name": c.function, "args": c.arguments, "id": c.id} for c in readable],
                tokens,
            )
            if not calls:
                nudge = run.render("no_tool_call", turns_left=run.turns_left - 1)
                run.invalid(message.text, "no tool call", reply=reply, feedback=nudge)
                state.messages.append(ChatMessageUser(content=nudge))
                continue
            if readable:
                asked = message.model_copy(update={"tool_calls": readable})
                result = await execute_tools([*state.messages[:-1], asked], tools)
                state.messages.extend(result.messages)
                play.raise_env_failure()
            unread = [call for call in calls if call not in readable]
            for index, call in enumerate(unread):  # (the reply's text and tokens go with its first step)
                state.messages.append(_unread(call, play, reply if not readable and index == 0 else None))
        state.completed = True
        return state

    return solve


def _unread(call: ToolCall, play: AgentPlay, reply: ModelReply | None) -> ChatMessageTool:
    """Answer a call that cannot run (an unknown tool, arguments that do not parse) as our
    ``tool_calling`` strategy does: an invalid turn while turns are left, else "not run"."""
    run = play.run
    if run.done or run.turns_left <= 0:
        text = NOT_RUN.format(why="the episode is over" if run.done else "the turn budget is spent")
    else:
        text = (
            f"the arguments of {call.function} could not be read: {call.parse_error}"
            if call.parse_error is not None
            else f"unknown tool {call.function!r}; the tools are {', '.join(play.tools)}"
        )
        run.invalid(describe_call(call.function, call.arguments), text, reply=reply, feedback=text)
    return ChatMessageTool(
        content=text, tool_call_id=call.id, function=call.function, error=ToolCallError("parsing", text)
    )


def _window(
    messages: list[ChatMessage], turn_starts: list[int], history_turns: int | None
) -> list[ChatMessage]:
    """The system and task messages, then the last ``history_turns`` turns (all of them for None)."""
    if history_turns is None or len(turn_starts) <= history_turns:
        return messages
    return [*messages[:2], *messages[turn_starts[-history_turns] :]]


@solver
def intercode_gold() -> Solver:
    """The env's gold policy, as our ``gold`` command plays it (no model is called)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        play = current_episode().gold(state.epoch)
        last = await play.play()
        for step in play.recorder.trajectory.steps:
            state.messages.append(ChatMessageAssistant(content=step.action, model="gold"))
            state.messages.append(ChatMessageUser(content=step.observation))
        state.output = ModelOutput.from_content("gold", last)
        state.completed = True
        return state

    return solve

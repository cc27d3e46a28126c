"""Agents, models and a strategy of "a user's own", for the tests of --agent, --strategy and --model refs.

The models are scripted (only a hosted LLM may be faked); the agents are real LangChain Runnables:
``create_agent`` graphs, a hand-built LangGraph graph, plain chains and hostile coroutines.
"""

from __future__ import annotations

import asyncio
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import Runnable, RunnableLambda
from langchain_core.tools import BaseTool

from intercode_agents.datasets import PublicTask, Task, select_tasks
from intercode_agents.models.scripted import ScriptedChatModel
from intercode_agents.strategies import EpisodeRun, Strategy

USAGE = {"input_tokens": 400, "output_tokens": 200, "total_tokens": 600}


def call(name: str, args: dict[str, Any], n: int, text: str = "", usage: bool = False) -> AIMessage:
    return AIMessage(
        text,
        tool_calls=[{"name": name, "args": args, "id": f"call_{n}"}],
        usage_metadata=USAGE if usage else None,  # type: ignore[arg-type]
    )


# -- models, also loaded by reference (--model tests/agent_fixtures.py:NAME) --------------------------


def _question(messages: list[BaseMessage]) -> str:
    return next(m.text for m in messages if isinstance(m, HumanMessage))


def _task_of(messages: list[BaseMessage]) -> Task:
    """The mini task whose question the prompt holds."""
    text = " ".join(m.text for m in messages)
    for env in ("bash", "sql", "python"):
        for task in select_tasks(env, "mini"):
            if task.query in text:
                return task
    raise AssertionError("the prompt holds no mini task's question")


def oracle(**settings: Any) -> BaseChatModel:
    """A text model that answers each mini task with its gold (ReAct shape), then submits."""

    def reply(messages: list[BaseMessage]) -> str:
        task = _task_of(messages)
        if any("Observation" in m.text for m in messages[2:]):
            return "Thought: done.\nAction: submit"
        return f"Thought: I know this one.\nAction:\n```{task.env}\n{task.gold}\n```"

    return ScriptedChatModel([reply] * 1000, model_name="oracle")


def clueless(**settings: Any) -> BaseChatModel:
    """A text model that always looks around and then submits: it never solves a task."""

    def reply(messages: list[BaseMessage]) -> str:
        if any("Observation" in m.text for m in messages[2:]):
            return "Thought: enough.\nAction: submit"
        return "Thought: let me look.\nAction: echo nothing here"

    return ScriptedChatModel([reply] * 1000, model_name="clueless")


def looper() -> BaseChatModel:
    """A tool-calling model that runs `ls` forever and never submits (600 tokens a reply)."""
    counter = iter(range(10_000))
    return ScriptedChatModel(
        [lambda _m: call("run_bash", {"command": "ls /testbed"}, next(counter), "again", usage=True)]
        * 10_000,
        model_name="looper",
    )


# -- agent factories (--agent tests/agent_fixtures.py:NAME) ---------------------------------------


def with_given_model(
    tools: list[BaseTool], model: BaseChatModel | None, task: PublicTask
) -> Runnable[Any, Any]:
    assert model is not None, "this factory needs --model"
    return create_agent(model, tools)


def looping(tools: list[BaseTool], model: BaseChatModel | None, task: PublicTask) -> Runnable[Any, Any]:
    """A create_agent graph whose model never stops calling tools."""
    return create_agent(model or looper(), tools)


def never_submits(tools: list[BaseTool], model: BaseChatModel | None, task: PublicTask) -> Runnable[Any, Any]:
    """Runs the gold of bash/mini/0, then ends with a message instead of calling submit."""
    script = [
        call("run_bash", {"command": "grep -c ERROR /testbed/logs/app.log"}, 1, "count them"),
        "There are 2 ERROR lines.",
    ]
    return create_agent(ScriptedChatModel(script), tools)


def unknown_tool_forever(
    tools: list[BaseTool], model: BaseChatModel | None, task: PublicTask
) -> Runnable[Any, Any]:
    """Keeps calling a tool that does not exist, so only the recursion limit ends it."""
    counter = iter(range(10_000))
    script = [lambda _m: call("run_bsh", {"command": "ls"}, next(counter))] * 10_000
    return create_agent(ScriptedChatModel(script), tools)


def direct_caller(tools: list[BaseTool], model: BaseChatModel | None, task: PublicTask) -> Runnable[Any, Any]:
    """A plain coroutine that calls the run tool in a loop, ignores every answer and swallows errors."""
    run_tool = next(t for t in tools if t.name != "submit")

    async def loop(messages: list[BaseMessage]) -> str:
        for n in range(200):
            try:
                await run_tool.ainvoke(
                    {
                        "name": run_tool.name,
                        "args": {"command": f"echo {n}"},
                        "id": f"c{n}",
                        "type": "tool_call",
                    }
                )
            except Exception:
                pass
        return "done"

    return RunnableLambda(loop)


def stubborn(tools: list[BaseTool], model: BaseChatModel | None, task: PublicTask) -> Runnable[Any, Any]:
    """Swallows its cancellation and keeps calling tools for a while: the runner must move on."""
    run_tool = next(t for t in tools if t.name != "submit")
    STUBBORN_CALLS.clear()

    async def loop(messages: list[BaseMessage]) -> str:
        for n in range(40):
            try:
                message = await run_tool.ainvoke(
                    {
                        "name": run_tool.name,
                        "args": {"command": f"echo {n}"},
                        "id": f"c{n}",
                        "type": "tool_call",
                    }
                )
                STUBBORN_CALLS.append(message.content)
                await asyncio.sleep(0.05)
            except asyncio.CancelledError:
                STUBBORN_CALLS.append("cancelled")
        return "done"

    return RunnableLambda(loop)


STUBBORN_CALLS: list[str] = []


def sleeper(tools: list[BaseTool], model: BaseChatModel | None, task: PublicTask) -> Runnable[Any, Any]:
    async def sleep(messages: list[BaseMessage]) -> str:
        await asyncio.sleep(3600)
        return "woke"

    return RunnableLambda(sleep)


def crashes(tools: list[BaseTool], model: BaseChatModel | None, task: PublicTask) -> Runnable[Any, Any]:
    async def crash(messages: list[BaseMessage]) -> str:
        table: dict[str, str] = {}
        return table["missing"]  # a bug of the agent's own

    return RunnableLambda(crash)


def broken_at_build(
    tools: list[BaseTool], model: BaseChatModel | None, task: PublicTask
) -> Runnable[Any, Any]:
    raise RuntimeError("cannot build the agent")


def not_a_runnable(tools: list[BaseTool], model: BaseChatModel | None, task: PublicTask) -> object:
    return {"not": "an agent"}


def wrong_signature(tools: list[BaseTool]) -> Runnable[Any, Any]:
    raise AssertionError("never called")


async def built_async(
    tools: list[BaseTool], model: BaseChatModel | None, task: PublicTask
) -> Runnable[Any, Any]:
    await asyncio.sleep(0)
    return never_submits(tools, model, task)


def failing_model(tools: list[BaseTool], model: BaseChatModel | None, task: PublicTask) -> Runnable[Any, Any]:
    return create_agent(ScriptedChatModel([ValueError("invalid api key")]), tools)


def full_context(tools: list[BaseTool], model: BaseChatModel | None, task: PublicTask) -> Runnable[Any, Any]:
    script: list[Any] = [
        call("run_bash", {"command": "ls /testbed"}, 1),
        ValueError("This model's maximum context length is 8192 tokens"),
    ]
    return create_agent(ScriptedChatModel(script), tools)


def chain_of_one_call(
    tools: list[BaseTool], model: BaseChatModel | None, task: PublicTask
) -> Runnable[Any, Any]:
    """A chain (no agent loop): one model reply with a tool call, which nobody runs."""
    return ScriptedChatModel([call("run_bash", {"command": "ls"}, 1, "I would run ls")]).bind_tools(tools)


def answer_peeker(tools: list[BaseTool], model: BaseChatModel | None, task: PublicTask) -> Runnable[Any, Any]:
    """An agent that plays python/mini/0 with its gold if the harness hands it over: through the task
    (``task.gold``), or through the env behind its tools (``tools[0].inner.env``)."""
    gold = getattr(task, "gold", None)
    env = getattr(getattr(tools[0], "inner", None), "env", None)
    if gold is None and env is not None:
        gold = env.task.gold
    PEEKED.clear()
    PEEKED.update(gold=gold, tools=tools, model=model, task=task)
    code = gold or "def second_largest(nums):\n    return 0"
    script = [
        call("run_python", {"code": code}, 1),
        call("submit", {"answer": "second_largest"}, 2),
        "submitted",
    ]
    return create_agent(model or ScriptedChatModel(script), tools)


PEEKED: dict[str, Any] = {}


class SecondLook(Strategy):
    """A user's strategy: one action, then a submit (loaded as tests/agent_fixtures.py:SecondLook)."""

    name = "second_look"
    prompt_set = "react"

    async def solve(self, run: EpisodeRun) -> None:
        await run.take_turn(await run.ask(run.messages()))


class NamedLikeReact(SecondLook):
    name = "react"


class NotAStrategy:
    name = "nope"


class CoinModel(BaseChatModel):
    """A text model that takes a seed: it answers mini task ``i`` with its gold when ``(seed + i)`` is
    even, else with a wrong action, then submits. So the solved epochs of each task are known."""

    seed: int = 0

    @property
    def _llm_type(self) -> str:
        return "coin"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> Any:
        from langchain_core.outputs import ChatGeneration, ChatResult

        task = _task_of(messages)
        index = int(task.id.rsplit("/", 1)[1])
        if any("Observation" in m.text for m in messages[2:]):
            text = "Thought: done.\nAction: submit"
        elif (self.seed + index) % 2 == 0:
            text = f"Thought: I know it.\nAction:\n```{task.env}\n{task.gold}\n```"
        else:
            text = "Thought: a guess.\nAction:\n```sql\nSELECT 1\n```"
        return ChatResult(generations=[ChatGeneration(message=AIMessage(text))])


def coin(**settings: Any) -> BaseChatModel:
    return CoinModel(**settings)


def settings_echo(**settings: Any) -> BaseChatModel:
    """The oracle, keeping the settings the runner passed in its metadata."""
    model = oracle()
    model.metadata = {"settings": settings}
    SETTINGS_SEEN.append(settings)
    return model


SETTINGS_SEEN: list[dict[str, Any]] = []


def own_deadline(tools: list[BaseTool], model: BaseChatModel | None, task: PublicTask) -> Runnable[Any, Any]:
    """Gives a tool call a deadline of its own, which the command outlives: the agent's own TimeoutError."""
    run_tool = next(t for t in tools if t.name != "submit")

    async def act(messages: list[BaseMessage]) -> str:
        call = {"name": run_tool.name, "args": {"command": "sleep 5"}, "id": "c1", "type": "tool_call"}
        async with asyncio.timeout(0.5):
            await run_tool.ainvoke(call)
        return "never"

    return RunnableLambda(act)

"""Your own LangChain agent, evaluated by the runner (concurrency, records, resume, metrics, report).

    intercode-agents eval bash --agent examples/own_agent.py:build --tasks bash/mini/0
    intercode-agents eval sql --agent examples/own_agent.py:build --model local --tasks mini

The runner calls ``build(tools, model, task)`` once per episode. ``tools`` are the episode's tools
(``run_bash``/``run_sql``/``run_python`` and ``submit``), ``model`` is the chat model of ``--model``
(None without one) and ``task`` the task's public view (``task.id``, ``task.query``, ``task.env``,
``task.fields`` such as Python's ``entry_point``; never its gold or tests). Return any
Runnable that takes messages; the runner sends it the task's question, counts its tool calls against
``--turns``, stops it at the budget, at ``submit`` or at the episode's time limit, and submits for it
if it ends without doing so.

Without ``--model`` this agent uses a scripted model that solves bash/mini/0 (it counts the ERROR
lines of a log), so the first command above runs offline and scores 1.0.
"""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool

from intercode_agents.datasets import PublicTask
from intercode_agents.models.scripted import ScriptedChatModel

SYSTEM = (
    "You work in a sandbox through tools. Look before you act, run one action at a time and read its "
    "output. When the output of your last action answers the task, call `submit`."
)


def build(tools: list[BaseTool], model: BaseChatModel | None, task: PublicTask) -> Runnable[Any, Any]:
    """The agent of one episode: LangChain's ``create_agent`` with our tools."""
    return create_agent(model or counts_error_lines(), tools, system_prompt=SYSTEM)


def counts_error_lines() -> BaseChatModel:
    """A scripted model that solves bash/mini/0: a look, the count, then submit."""

    def call(n: int, name: str, args: dict[str, str], text: str = "") -> AIMessage:
        return AIMessage(text, tool_calls=[{"name": name, "args": args, "id": f"call_{n}"}])

    return ScriptedChatModel(
        [
            call(1, "run_bash", {"command": "ls /testbed/logs"}, "Let me see which logs there are."),
            call(2, "run_bash", {"command": "grep -c ERROR /testbed/logs/app.log"}, "Now count the lines."),
            call(3, "submit", {}),
            "The log has the count shown above; it is submitted.",
        ]
    )

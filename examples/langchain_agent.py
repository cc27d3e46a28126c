"""Our tools inside a LangChain agent: `create_agent` with the toolkit of one episode.

    python examples/langchain_agent.py                                   # scripted model, no API key
    python examples/langchain_agent.py --model openai:gpt-4o-mini --task bash/mini/2

With --model, any `provider:name` that LangChain's init_chat_model knows works (the provider's
package and API key must be installed/set). Without it, a scripted model solves bash/mini/0.
"""

from __future__ import annotations

import argparse
import asyncio

from langchain.agents import create_agent
from langchain.chat_models import init_chat_model
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, ToolMessage

from intercode_agents import make_env
from intercode_agents.models.scripted import ScriptedChatModel
from intercode_agents.sandbox import close_docker_client
from intercode_agents.tools import EnvToolkit

SYSTEM = (
    "You solve tasks in an isolated sandbox through the tools you are given. Run one action at a "
    "time, read its output, and call `submit` once the output of your last action answers the task."
)


def scripted_model() -> BaseChatModel:
    """Plays a solution of bash/mini/0 (count the ERROR lines of a log)."""
    return ScriptedChatModel(
        [
            AIMessage(content="", tool_calls=[_call("run_bash", {"command": "ls /testbed/logs"}, "1")]),
            AIMessage(
                content="",
                tool_calls=[_call("run_bash", {"command": "grep -c ERROR /testbed/logs/app.log"}, "2")],
            ),
            AIMessage(content="", tool_calls=[_call("submit", {}, "3")]),
            "The log has 2 ERROR lines; submitted.",
        ]
    )


def _call(name: str, args: dict[str, str], call_id: str) -> dict[str, object]:
    return {"name": name, "args": args, "id": f"call_{call_id}", "type": "tool_call"}


async def main(task_id: str, model_spec: str | None) -> float | None:
    model = init_chat_model(model_spec) if model_spec else scripted_model()
    async with make_env(task_id.split("/")[0]) as env:
        query, _ = await env.reset(task_id)
        agent = create_agent(model, EnvToolkit(env=env).get_tools(), system_prompt=SYSTEM)
        result = await agent.ainvoke(
            {"messages": [{"role": "user", "content": query}]}, {"recursion_limit": 40}
        )
    await close_docker_client()
    reward = None
    for message in result["messages"]:
        print(f"[{message.type}] {message.text[:300]}")
        if isinstance(message, ToolMessage) and message.name == "submit" and message.artifact:
            reward = message.artifact["reward"]
    print(f"task {task_id}: reward {reward}")
    return reward


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--task", default="bash/mini/0", help="a task id, e.g. bash/mini/0 or sql/mini/1")
    parser.add_argument("--model", default=None, help="provider:name for init_chat_model (default: scripted)")
    args = parser.parse_args()
    asyncio.run(main(args.task, args.model))

"""Your own strategy ("second chance": one command, and one more if it fails) on the mini Bash tasks."""

import asyncio

from langchain_core.messages import AIMessage, HumanMessage

from intercode_agents import make_env
from intercode_agents.models.scripted import ScriptedChatModel
from intercode_agents.sandbox import close_docker_client
from intercode_agents.strategies import EpisodeRun, Strategy, register_strategy

SCRIPT = ["grep -c ERROR /testbed/logs/app.log", "ls /nope", "find /testbed -type f | wc -l"]


class SecondChance(Strategy):
    name = "second_chance"
    prompt_set = "try_again"  # reuse the shipped Try Again prompts

    async def solve(self, run: EpisodeRun) -> None:
        reply = await run.ask(run.messages())
        first = await run.take_turn(reply)
        if not first.done and first.step.errored:  # else the base class submits
            retry = [AIMessage(reply.text), HumanMessage(f"That failed:\n{first.feedback}\nOnce more.")]
            await run.take_turn(await run.ask(run.messages([retry])))


async def main() -> None:
    strategy = register_strategy(SecondChance)(max_turns=2)  # now get_strategy("second_chance") works too
    model = ScriptedChatModel(SCRIPT)  # a stand-in for a real chat model
    async with make_env("bash") as env:
        for task_id in ("bash/mini/0", "bash/mini/3"):
            trajectory = await strategy.run(env, model, task_id=task_id)
            print(task_id, trajectory.outcome, trajectory.reward, [step.action for step in trajectory.steps])
    await close_docker_client()


if __name__ == "__main__":
    asyncio.run(main())

"""Tool calling: the model is bound to the episode's tools and calls them natively.

Each tool call is one turn: ``run_<language>`` runs an action, ``submit`` ends the episode. A reply
without a tool call gets a reminder (and uses a turn); calls beyond the budget are answered without
running. When the budget is spent the episode is submitted as it stands.
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolCall, ToolMessage
from langchain_core.tools import BaseTool

from intercode_agents.errors import ConfigError
from intercode_agents.models import describe_model
from intercode_agents.models.calls import ModelReply
from intercode_agents.strategies.base import Strategy
from intercode_agents.strategies.episode import EnvFailure, EpisodeRun
from intercode_agents.tools.env_tools import EnvToolkit, SubmitTool, step_fields
from intercode_agents.trajectory import Step

NOT_RUN = "not run: {why}"


class ToolCalling(Strategy):
    name = "tool_calling"
    templates = ("system", "task", "no_tool_call")

    async def solve(self, run: EpisodeRun) -> None:
        tools = EnvToolkit(env=run.env, observation_limit=self.config.observation_limit).get_tools()
        model = run.chat_model
        try:
            bound = model.bind_tools(tools)
        except NotImplementedError as exc:
            raise ConfigError(
                f"the model {describe_model(model)['name']} does not support tool calling (bind_tools); "
                "use a text strategy such as react"
            ) from exc
        by_name = {tool.name: tool for tool in tools}
        history: list[list[BaseMessage]] = []
        while run.turns_left > 0 and not run.done:
            reply = await run.ask(run.messages(history), model=bound)
            calls = reply.message.tool_calls
            broken = reply.message.invalid_tool_calls
            if not calls and not broken:
                nudge = run.render("no_tool_call", turns_left=run.turns_left - 1)
                run.invalid(reply.text, "no tool call", reply=reply, feedback=nudge)
                history.append([AIMessage(content=reply.text), HumanMessage(content=nudge)])
                continue
            answers: list[BaseMessage] = []
            for index, call in enumerate(calls):
                answers.append(await self._answer(run, by_name, call, reply if index == 0 else None))
            for bad in broken:
                reason = f"the arguments of {bad.get('name')} could not be read: {bad.get('error')}"
                if run.turns_left > 0 and not run.done:
                    action = str(bad.get("args") or "")
                    run.invalid(action, reason, reply=None if calls else reply, feedback=reason)
                answers.append(ToolMessage(reason, tool_call_id=bad.get("id") or "", status="error"))
            history.append([reply.message, *answers])

    async def _answer(
        self, run: EpisodeRun, by_name: dict[str, BaseTool], call: ToolCall, reply: ModelReply | None
    ) -> ToolMessage:
        call_id = call.get("id") or ""
        if run.done or run.turns_left == 0:
            why = "the episode is over" if run.done else "the turn budget is spent"
            return ToolMessage(NOT_RUN.format(why=why), tool_call_id=call_id, status="error")
        tool = by_name.get(call["name"])
        if tool is None:
            reason = f"unknown tool {call['name']!r}; the tools are {', '.join(by_name)}"
            run.invalid(_describe(call), reason, reply=reply, feedback=reason)
            return ToolMessage(reason, tool_call_id=call_id, status="error")
        message = await tool.ainvoke({**call, "type": "tool_call"})
        failure = getattr(tool, "last_failure", None)
        if failure is not None:
            raise EnvFailure(f"env failed in {tool.name}: {type(failure).__name__}: {failure}") from failure
        self._record(run, call, message, reply, submit=isinstance(tool, SubmitTool))
        return message

    def _record(
        self, run: EpisodeRun, call: ToolCall, message: ToolMessage, reply: ModelReply | None, *, submit: bool
    ) -> None:
        content: str = message.text
        artifact: dict[str, Any] = message.artifact or {}
        thought = (reply.text.strip() or None) if reply is not None else None
        if message.status == "error" or not artifact:
            run.invalid(_describe(call), content, thought=thought, reply=reply, feedback=content)
            return
        turn = run.count_turn()
        if submit:
            run.finish(artifact["reward"], artifact["reward_parts"])
            step = Step(
                turn=turn,
                kind="submit",
                action=artifact["action"],
                observation=content,
                reward=artifact["reward"],
                duration_s=artifact["duration_s"],
                thought=thought,
                task_files=artifact.get("task_files"),
            )
            run.record(step, reply)
            return
        run.turn_limit_reached = run.turn_limit_reached or bool(artifact.get("turn_limit_reached"))
        notes = run.budget_notes()
        if notes:  # the model reads what is left of its budgets after the output
            content = message.content = content + "".join(f"\n[{note}]" for note in notes)
        run.actions.append(artifact["action"])
        run.observations.append(artifact["output"])
        step = Step(
            turn=turn,
            action=artifact["action"],
            observation=content,
            thought=thought,
            **step_fields(artifact),
        )
        run.record(step, reply)


def _describe(call: ToolCall) -> str:
    return f"{call.get('name')}({json.dumps(call.get('args') or {}, ensure_ascii=False)})"

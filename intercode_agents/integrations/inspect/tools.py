"""Our tools in Inspect's form: ``run_bash`` / ``run_sql`` / ``run_python`` and ``submit``.

Names, descriptions and argument schemas are our LangChain tools' own (:mod:`intercode_agents.tools`),
and so is every answer: a call runs our tool on the sample's episode, through the episode's gate
(:mod:`.episode`), so a model reads exactly the observation our runner's ``tool_calling`` strategy
shows (cut head + tail to the observation limit, the exit code and timeout notes), and a refused or
failed call is an Inspect :class:`~inspect_ai.tool.ToolError` with our message. Inspect's own cut of
tool output (16 KiB by default) is switched off for them (``max_output=0``): ours already applied.

The tools find the episode through Inspect's ``sandbox()`` of the running sample, so any Inspect agent
can use them (``react(tools=intercode_tools("bash"))``) on a task whose sandbox is ``intercode``; the
turn budget holds whoever calls them.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.tool import Tool, ToolDef, ToolError, ToolParam, ToolParams
from inspect_ai.util import sandbox
from langchain_core.tools import ToolException
from pydantic import BaseModel

from intercode_agents.envs import Env
from intercode_agents.envs.registry import env_class
from intercode_agents.integrations.inspect.episode import AgentSettings, SampleEpisode
from intercode_agents.tools.env_tools import tool_specs

#: How a record names the strategy of an agent that played through these tools without our solver.
FOREIGN_AGENT = "inspect/agent"


def current_episode() -> SampleEpisode:
    """The running sample's episode (a ToolError when its sandbox is not one of ours with a task)."""
    from intercode_agents.integrations.inspect.sandbox import IntercodeSandbox

    try:
        box = sandbox().as_type(IntercodeSandbox)
    except (TypeError, ProcessLookupError, RuntimeError) as exc:
        raise ToolError(f"these tools need the sample's sandbox to be 'intercode': {exc}") from None
    if box.episode is None:
        raise ToolError("this sample's sandbox has no task (no task_id in its metadata): there is no episode")
    return box.episode


def _schema_params(schema: type[BaseModel]) -> ToolParams:
    """An argument model of our tools as Inspect's tool parameters (the same JSON schema)."""
    raw = schema.model_json_schema()
    properties = {
        name: ToolParam(type="string", description=str(field.get("description") or name))
        for name, field in (raw.get("properties") or {}).items()
    }
    return ToolParams(properties=properties, required=list(raw.get("required") or []))


def intercode_tools(
    env: str | Env = "bash",
    *,
    turns: int = 10,
    observation_limit: int = 4000,
    history_turns: int | None = None,
) -> list[Tool]:
    """The tools of env ``env`` (a name or an env YAML's path) as Inspect tools: its run tool and
    ``submit``. ``turns`` and ``observation_limit`` are the episode's budget and observation cut when
    an agent other than our solver is the first to call them (our solver sets its own)."""
    settings = AgentSettings(turns=turns, observation_limit=observation_limit, history_turns=history_turns)
    specs = tool_specs(env if isinstance(env, Env) else env_class(env))
    return [_tool(spec.name, spec.description, spec.args_schema, settings) for spec in specs]


def _tool(name: str, description: str, schema: type[BaseModel], settings: AgentSettings) -> Tool:
    async def execute(**kwargs: Any) -> str:
        # The record's model and epoch are filled in by the scorer, which has the sample's state.
        play = current_episode().agent(settings, strategy=FOREIGN_AGENT, model="", epoch=1)
        try:
            return await play.call(name, dict(kwargs), None)
        except ToolException as exc:
            play.raise_env_failure()  # (the harness's fault: the sample errs, Inspect may retry it)
            raise ToolError(str(exc)) from None

    parameters = _schema_params(schema)
    return ToolDef(execute, name=name, description=description, parameters=parameters, max_output=0).as_tool()

"""LangChain tools bound to one episode: ``run_<language>`` and ``submit``.

Every tool answers with ``(content, artifact)``: the content is what a model reads (the observation cut
head+tail to ``observation_limit`` characters, plus short notes), the artifact is a dict for programs
(the full output as captured, exit code, flags, the turn; for ``submit`` the reward and the parts of
it an agent may see, :func:`~intercode_agents.envs.reward_view.agent_parts`: an artifact reaches
whatever holds the tool's messages, an agent's own code included, so the parts that describe the
gold stay in the env's record of the submit, ``env.submitted``).
Problems a model can cause (an invalid action, a step after submit, an env failure) raise
:class:`~langchain_core.tools.ToolException`, which the tools turn into an error message for the
model (``handle_tool_error=True``), so a tool never crashes an agent.

Calls on one env are serialised by a per-env lock, so parallel tool calls of one model turn run one
after the other; tools of different envs run concurrently.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal
from weakref import WeakKeyDictionary

from langchain_core.tools import BaseTool, BaseToolkit, ToolException
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, create_model

from intercode_agents.envs.base import Env
from intercode_agents.envs.reward_view import agent_parts
from intercode_agents.envs.steps import StepResult, Submit, read_action
from intercode_agents.errors import InvalidAction
from intercode_agents.tools.messages import ArgumentsErrorHandler, async_only, bad_arguments
from intercode_agents.tools.observation import (
    DEFAULT_OBSERVATION_LIMIT,
    MIN_OBSERVATION_LIMIT,
    cap_output,
    model_view,
)

TOOL_LANGUAGES = ("bash", "sql", "python")
TURN_LIMIT_NOTE = "turn limit reached: call submit now"

_locks: WeakKeyDictionary[Env, asyncio.Lock] = WeakKeyDictionary()


#: The fields of a run tool's artifact that a trajectory Step records as they are.
STEP_FIELDS = (
    "exit_code",
    "errored",
    "duration_s",
    "observation_truncated",
    "output_truncated",
    "timed_out",
    "task_files",
)


def step_fields(artifact: dict[str, Any]) -> dict[str, Any]:
    """What a :class:`~intercode_agents.trajectory.Step` takes from a run tool's artifact."""
    return {name: artifact[name] for name in STEP_FIELDS}


def _files(result: StepResult) -> dict[str, Any] | None:
    """What the step did to the task files, as the artifact carries it (None: not measured)."""
    return result.task_files.model_dump() if result.task_files is not None else None


def env_lock(env: Env) -> asyncio.Lock:
    """The lock that serialises actions on ``env`` (shared by every toolkit bound to it)."""
    lock = _locks.get(env)
    if lock is None:
        lock = _locks[env] = asyncio.Lock()
    return lock


def tool_language(env: Env | type[Env]) -> str:
    """The language of an env's action tool: its ``action_language`` (bash for CTF), bash for one
    there is no tool of."""
    return env.action_language if env.action_language in TOOL_LANGUAGES else "bash"


def _ensure_running(env: Env, *, needs_task: bool) -> None:
    if needs_task and env.task is None:
        raise ToolException("there is no task to submit: the env has not been reset with a task")
    if env.done:
        raise ToolException("the episode is over: the answer was already submitted, no more actions run")


class BashCommand(BaseModel):
    command: str = Field(
        description="Bash command(s) to run in the task's shell. The working directory, variables and "
        "files persist between calls."
    )


class SqlQuery(BaseModel):
    query: str = Field(description="A SQL query (MySQL dialect) to run against the task's database.")


class PythonCode(BaseModel):
    code: str = Field(
        description="Python code to run in a persistent interpreter; definitions stay for later calls and "
        "the value of a final expression is echoed."
    )


class _EnvTool(BaseTool):
    """Shared fields and behaviour of the tools bound to one env."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    env: Env
    observation_limit: int = Field(default=DEFAULT_OBSERVATION_LIMIT, ge=MIN_OBSERVATION_LIMIT)
    response_format: Literal["content", "content_and_artifact"] = "content_and_artifact"
    handle_tool_error: bool = True
    handle_validation_error: ArgumentsErrorHandler = bad_arguments

    _last_failure: Exception | None = PrivateAttr(default=None)

    @property
    def last_failure(self) -> Exception | None:
        """The exception the env raised in this tool's latest call (None if it did not raise).

        The model only sees a message; programs that must tell a broken env from a bad action
        (to stop an episode as an env error, say) look here.
        """
        return self._last_failure

    def _run(self, *args: Any, **kwargs: Any) -> Any:
        raise async_only(self.name)

    async def _call(
        self, call: Callable[[], Awaitable[StepResult]], *, needs_task: bool = False
    ) -> StepResult:
        self._last_failure = None
        async with env_lock(self.env):
            _ensure_running(self.env, needs_task=needs_task)
            try:
                return await call()
            except InvalidAction as exc:
                raise ToolException(f"invalid action: {exc}") from exc
            except Exception as exc:
                self._last_failure = exc
                raise ToolException(f"the environment failed: {type(exc).__name__}: {exc}") from exc


class _RunTool(_EnvTool):
    """Runs one action in the episode and returns its (truncated) output."""

    async def _act(self, action: str) -> tuple[str, dict[str, Any]]:
        if isinstance(read_action(action), Submit):  # a model's text: say where submitting is
            raise ToolException("to finish the task, call the `submit` tool instead of running `submit`")
        result = await self._call(lambda: self.env.step(action))
        if result.kind == "invalid":
            raise ToolException(result.observation)
        view = model_view(
            result.observation,
            self.observation_limit,
            exit_code=result.exit_code,
            timed_out=result.timed_out,
            notes=(TURN_LIMIT_NOTE,) if result.truncated else (),
        )
        artifact = {
            "action": action,
            "output": cap_output(result.observation),
            "exit_code": result.exit_code,
            "errored": result.errored,
            "timed_out": result.timed_out,
            "output_truncated": result.output_truncated,
            "observation_truncated": view.truncated,
            "duration_s": result.duration_s,
            "turn": result.turn,
            "turn_limit_reached": result.truncated,
            "task_files": _files(result),
        }
        return view.text, artifact


class RunBashTool(_RunTool):
    name: str = "run_bash"
    description: str = "Run bash command(s) in the task's sandbox and return the output."
    args_schema: type[BaseModel] = BashCommand

    async def _arun(self, command: str) -> tuple[str, dict[str, Any]]:
        return await self._act(command)


class RunSqlTool(_RunTool):
    name: str = "run_sql"
    description: str = "Run a SQL query against the task's database and return the result rows."
    args_schema: type[BaseModel] = SqlQuery

    async def _arun(self, query: str) -> tuple[str, dict[str, Any]]:
        return await self._act(query)


class RunPythonTool(_RunTool):
    name: str = "run_python"
    description: str = "Run Python code in the task's interpreter and return what it printed."
    args_schema: type[BaseModel] = PythonCode

    async def _arun(self, code: str) -> tuple[str, dict[str, Any]]:
        return await self._act(code)


class SubmitLastOutput(BaseModel):
    """No arguments: the output of the last action is the answer."""


class SubmitAnswer(BaseModel):
    answer: str = Field(description="The answer to submit.")


def _answer_schema(description: str) -> type[BaseModel]:
    """The submit tool's arguments: one ``answer``, described as the env says."""
    if description == SubmitAnswer.model_fields["answer"].description:
        return SubmitAnswer
    return create_model("SubmitAnswer", answer=(str, Field(description=description)))


class SubmitTool(_EnvTool):
    """Ends the episode and returns the reward (with the parts an agent may see in the artifact)."""

    name: str = "submit"
    description: str = Env.submit_description
    args_schema: type[BaseModel] = SubmitLastOutput

    def __init__(self, **data: Any) -> None:
        super().__init__(**data)
        self.description = self.env.submit_description
        if self.env.submit_takes_argument:
            self.args_schema = _answer_schema(self.env.answer_description)

    async def _arun(self, answer: str = "") -> tuple[str, dict[str, Any]]:
        if self.env.submit_takes_argument:
            answer = answer.strip() or self.env.default_submission()
            if not answer:
                raise ToolException("submit needs an answer: pass it as `answer`")
        else:
            answer = ""
        result = await self._call(lambda: self.env.submit(answer), needs_task=True)
        artifact = {
            "action": f"submit {answer}" if answer else "submit",
            "reward": result.reward,
            "reward_parts": agent_parts(self.env, result.reward_parts),
            "corrupt": bool(result.reward_parts.get("corrupt")),
            "submission": result.submission,
            "turn": result.turn,
            "duration_s": result.duration_s,
            "task_files": _files(result),
        }
        return result.observation, artifact


# The concrete classes (each names and describes itself), by tool language.
_RUN_TOOLS: dict[str, type[RunBashTool | RunSqlTool | RunPythonTool]] = {
    "bash": RunBashTool,
    "sql": RunSqlTool,
    "python": RunPythonTool,
}


@dataclass(frozen=True)
class ToolSpec:
    """What a model is told of one of an env's tools: its name, description and arguments."""

    name: str
    description: str
    args_schema: type[BaseModel]


def tool_specs(env: Env | type[Env]) -> list[ToolSpec]:
    """The tools :class:`EnvToolkit` gives an env (or an env class), as other frameworks declare them
    (Inspect's tools, ATIF's tool definitions): the run tool, then ``submit``."""
    run_tool = _RUN_TOOLS[tool_language(env)]
    defaults = {name: field.default for name, field in run_tool.model_fields.items()}
    submit_args = _answer_schema(env.answer_description) if env.submit_takes_argument else SubmitLastOutput
    return [
        ToolSpec(defaults["name"], defaults["description"], defaults["args_schema"]),
        ToolSpec(SubmitTool.model_fields["name"].default, env.submit_description, submit_args),
    ]


class EnvToolkit(BaseToolkit):
    """The tools of one env: ``run_<language>`` (``run_bash`` for CTF) and ``submit``.

    ``observation_limit`` caps the characters of output a model reads per call (head + tail); the
    artifact keeps the output as the sandbox captured it.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    env: Env
    observation_limit: int = Field(default=DEFAULT_OBSERVATION_LIMIT, ge=MIN_OBSERVATION_LIMIT)

    def get_tools(self) -> list[BaseTool]:
        run_tool = _RUN_TOOLS[tool_language(self.env)]
        return [
            run_tool(env=self.env, observation_limit=self.observation_limit),
            SubmitTool(env=self.env, observation_limit=self.observation_limit),
        ]

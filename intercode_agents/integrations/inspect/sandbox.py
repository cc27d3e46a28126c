"""The ``intercode`` sandbox provider: Inspect samples in our sandboxes, with our isolation.

A sample's sandbox is one episode of one of our envs (:func:`~intercode_agents.envs.make_env`): at
``sample_init`` the env is reset on the sample's task, which takes a sandbox nobody ever used from
the env's warm pool (our pristine contract); the gold never enters it (a Bash gold runs in a sandbox
of its own, SQL's on a server no agent reaches, Python's tests out of the agent's reach). The sample
names its task by id in its metadata (``task_id``), never by content: the gold and tests are looked
up here, so neither Inspect's log nor this provider's arguments ever carry them.

Other Inspect tasks may use the provider for a sandbox of one of our kinds: ``sandbox=("intercode",
"bash")`` (an env name, or the path of an env YAML; :func:`intercode_sandbox` for the other options)
gives every sample without a ``task_id`` a live sandbox of that env's default image, with the same
limits and isolation (no network, memory, pids, disk and CPU caps, dropped capabilities), removed
when the sample ends.

Envs are kept per task and event loop and reused by the next sample (as the runner's workers reuse
theirs), so warm pools and the SQL servers outlive one sample; each sample still gets its own
never-used sandbox, and the one it used is removed at ``sample_cleanup``. ``task_cleanup`` closes
them. The SQL env gives its agent a database connection, not a machine: its sandbox runs no
commands (use the ``run_sql`` tool).
"""

from __future__ import annotations

import asyncio
import weakref
from pathlib import Path
from typing import Any, Literal, overload

from inspect_ai.util import (
    ExecResult,
    SandboxEnvironment,
    SandboxEnvironmentConfigType,
    SandboxEnvironmentSpec,
    SandboxUnavailableError,
    sandboxenv,
)
from pydantic import BaseModel, ConfigDict

from intercode_agents.envs import Env, make_env
from intercode_agents.envs.pooled_env import PooledEnv
from intercode_agents.integrations.inspect import sandbox_io
from intercode_agents.integrations.inspect.episode import SampleEpisode
from intercode_agents.sandbox import Sandbox, cleanup_containers
from intercode_agents.spec import ENVS

PROVIDER = "intercode"
# Samples at once unless --max-sandboxes says otherwise (each may hold 2-3 containers).
DEFAULT_CONCURRENCY = 4


class IntercodeSandboxConfig(BaseModel):
    """What an ``intercode`` sandbox is: which env (a name or an env YAML's path), its reward mode,
    how actions run (``session``, or ``paper`` for Bash and CTF), on which engines (an engine string;
    None: ``$INTERCODE_ENGINES`` or the local engine) and each action's timeout (None: the env's)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    env: str = "bash"
    reward: str = "intercode"
    execution: str = "session"
    engines: str | None = None
    action_timeout: float | None = None

    def env_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"reward": self.reward, "execution": self.execution}
        if self.engines is not None:
            options["backend"] = self.engines
        if self.action_timeout is not None:
            options["action_timeout"] = self.action_timeout
        return options


def read_config(config: SandboxEnvironmentConfigType | None) -> IntercodeSandboxConfig:
    """The provider's config from what a task gives: our config model, a mapping, an env name or None."""
    if isinstance(config, IntercodeSandboxConfig):
        return config
    if config is None:
        return IntercodeSandboxConfig()
    if isinstance(config, str):
        return IntercodeSandboxConfig(env=_env_of(config))
    if isinstance(config, BaseModel):
        return IntercodeSandboxConfig.model_validate(config.model_dump())
    return IntercodeSandboxConfig.model_validate(config)


def _env_of(text: str) -> str:
    """The env a string config names: Inspect takes every string config for a file and makes a relative
    one a path under the task's folder, so ``("intercode", "sql")`` arrives as ``/that/folder/sql``: a
    path that is no file but ends in an env's name is that env; an existing file is an env YAML."""
    path = Path(text)
    if path.is_file() or text in ENVS:
        return text
    if path.name in ENVS and not path.exists():
        return path.name
    return text  # (load_spec says what is wrong with it)


def intercode_sandbox(env: str = "bash", **options: Any) -> SandboxEnvironmentSpec:
    """The sandbox spec another Inspect task gives for one of our sandboxes: ``sandbox=intercode_sandbox(
    "python")`` (the options are :class:`IntercodeSandboxConfig`'s)."""
    return SandboxEnvironmentSpec(PROVIDER, IntercodeSandboxConfig(env=env, **options))


# Idle envs by event loop and config: a sample takes one (or makes one), gives it back at its end.
# The shelf is not keyed by task: Inspect's final ``task_cleanup`` is called with the task name
# "shutdown", once per config, and must find (and close) every env that config made.
_idle: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, list[Env]]] = (
    weakref.WeakKeyDictionary()
)


def _shelf(config: IntercodeSandboxConfig) -> list[Env]:
    by_config = _idle.setdefault(asyncio.get_running_loop(), {})
    return by_config.setdefault(config.model_dump_json(), [])


async def _take_env(config: IntercodeSandboxConfig) -> Env:
    shelf = _shelf(config)
    if shelf:
        return shelf.pop()
    env = make_env(config.env, **config.env_options())
    try:
        await env.start()
    except BaseException:
        await env.close()
        raise
    return env


@sandboxenv(name=PROVIDER)
class IntercodeSandbox(SandboxEnvironment):
    """One sample's sandbox: an episode of one of our envs (see the module docstring)."""

    def __init__(self, env: Env, episode: SampleEpisode | None, config: IntercodeSandboxConfig):
        super().__init__()
        self.env = env
        self.episode = episode
        self._config = config
        self._workdir: str | None = None

    # -- lifecycle -------------------------------------------------------------------------------
    @classmethod
    def config_deserialize(cls, config: dict[str, Any]) -> BaseModel:
        return IntercodeSandboxConfig.model_validate(config)

    @classmethod
    def default_concurrency(cls) -> int | None:
        return DEFAULT_CONCURRENCY

    @classmethod
    async def sample_init(
        cls, task_name: str, config: SandboxEnvironmentConfigType | None, metadata: dict[str, str]
    ) -> dict[str, SandboxEnvironment]:
        settings = read_config(config)
        env = await _take_env(settings)
        try:
            task_id = metadata.get("task_id")
            if task_id:
                question, info = await env.reset(task_id=str(task_id))
                episode: SampleEpisode | None = SampleEpisode(env, question, info)
            else:
                episode = None
                if isinstance(env, PooledEnv):
                    await env.ensure_tool_mode()  # a live sandbox of the env's default image
        except BaseException:
            await env.close()
            raise
        return {"default": cls(env, episode, settings)}

    @classmethod
    async def sample_cleanup(
        cls,
        task_name: str,
        config: SandboxEnvironmentConfigType | None,
        environments: dict[str, SandboxEnvironment],
        interrupted: bool,
    ) -> None:
        for environment in environments.values():
            if isinstance(environment, IntercodeSandbox):
                await environment._release(interrupted)

    async def _release(self, interrupted: bool) -> None:
        """The sample is over: its sandbox is removed, the env goes back to the shelf (or is closed)."""
        env = self.env
        try:
            if isinstance(env, PooledEnv):
                await env.return_sandbox()  # untrusted: removed, never lent again
        except BaseException:
            await env.close()
            raise
        if interrupted:
            await env.close()
        else:
            _shelf(self._config).append(env)

    @classmethod
    async def task_cleanup(
        cls, task_name: str, config: SandboxEnvironmentConfigType | None, cleanup: bool
    ) -> None:
        shelf = _shelf(read_config(config))
        envs, shelf[:] = list(shelf), []
        for env in envs:
            await env.close()

    @classmethod
    async def cli_cleanup(cls, id: str | None) -> None:
        """``inspect sandbox cleanup intercode``: remove our sandboxes whose process is gone."""
        await asyncio.to_thread(cleanup_containers)

    # -- Inspect's sandbox API ---------------------------------------------------------------------
    def _sandbox(self) -> Sandbox:
        sb = self.env.sandbox if isinstance(self.env, PooledEnv) else None
        if sb is None:
            raise SandboxUnavailableError(
                f"the {self.env.name} env gives its agent no machine to run commands in"
                + (
                    " (a database connection: use the run_sql tool)"
                    if self.env.action_language == "sql"
                    else ""
                )
            )
        return sb

    async def _working_folder(self) -> str:
        """Where relative paths and commands without ``cwd`` start: the image's working folder."""
        if self._workdir is None:
            found = await self._sandbox().exec(["pwd"], timeout=30)
            self._workdir = found.output.strip() or "/"
        return self._workdir

    async def exec(
        self,
        cmd: list[str],
        input: str | bytes | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        user: str | None = None,
        timeout: int | None = None,
        timeout_retry: bool = True,
        concurrency: bool = True,
    ) -> ExecResult[str]:
        sb = self._sandbox()
        folder = sandbox_io.resolve(cwd or ".", await self._working_folder())
        return await sandbox_io.exec_process(
            sb, cmd, input=input, cwd=folder, env=env, user=user, timeout=timeout
        )

    async def write_file(self, file: str, contents: str | bytes) -> None:
        data = contents.encode("utf-8") if isinstance(contents, str) else contents
        path = sandbox_io.resolve(file, await self._working_folder())
        await sandbox_io.write_file(self._sandbox(), path, data, file)

    @overload
    async def read_file(self, file: str, text: Literal[True] = True) -> str: ...

    @overload
    async def read_file(self, file: str, text: Literal[False]) -> bytes: ...

    async def read_file(self, file: str, text: bool = True) -> str | bytes:
        path = sandbox_io.resolve(file, await self._working_folder())
        data = await sandbox_io.read_file(self._sandbox(), path, file)
        return data.decode("utf-8") if text else data

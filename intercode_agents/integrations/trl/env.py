"""Environments for TRL's GRPO trainer: ``GRPOTrainer(environment_factory=...)`` over our envs.

TRL builds instances with no arguments and keeps them in a pool ("construct once, reset often"); for
each rollout it calls ``reset(**row)`` with the whole dataset row, offers the model every public
function of the class but ``reset`` and ``get_reward`` as a tool (the schema read from its type
hints and docstring), and at the end asks ``get_reward()``. It never calls a close. So:

- one class per kind of action and submit, because the tools are the class's functions:
  :class:`BashEnvironment` (``run_bash``, ``submit()``), :class:`SQLEnvironment` (``run_sql``,
  ``submit()``), :class:`PythonEnvironment` (``run_python``, ``submit(answer)``: the function's name)
  and :class:`CTFEnvironment` (``run_bash``, ``submit(answer)``: the flag). :func:`environment_factory`
  picks the class for any env, a user's YAML included, and returns a picklable factory;
- ``reset`` starts the row's ``task_id`` (or a task drawn from ``selector`` with ``seed``, or from the
  factory's ``tasks``) in a fresh sandbox, ending the instance's previous episode first, and returns
  the tool-calling strategy's text for the task, which TRL appends to the row's last prompt message
  (with the strategy's instructions first when the row brings no system message of its own);
- a tool returns what the model should read (the output as a model sees it); a call after the
  episode ended raises, which TRL hands to the model as an error;
- ``get_reward`` is the submit's reward; an episode the model left unsubmitted is submitted as it
  stands first (the runner's forced submit). An episode whose env failed (a harness fault) or whose
  task cannot be scored (a gold that fails) gives ``None``, which TRL leaves out of the loss.

Everything is synchronous: calls run on the process's adapter loop
(:mod:`~intercode_agents.integrations.background_loop`), where all instances share the warm pools.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

from intercode_agents.envs.registry import env_class
from intercode_agents.errors import ConfigError
from intercode_agents.integrations import background_loop
from intercode_agents.runner.rollout import EpisodeFailed, Rollout, RolloutOptions, Turn
from intercode_agents.strategies.opening import episode_prompts
from intercode_agents.tools.observation import DEFAULT_OBSERVATION_LIMIT

STRATEGY = "tool_calling"  # whose prompts the env speaks


class IntercodeEnvironment:
    """What every TRL environment of ours shares; use a subclass (see the module docstring)."""

    default_env: ClassVar[str]

    def __init__(
        self,
        env: str | Path | None = None,
        *,
        tasks: str | None = None,
        max_turns: int | None = 10,
        observation_limit: int = DEFAULT_OBSERVATION_LIMIT,
        record_dir: str | Path | None = None,
        call_timeout_s: float | None = None,
        **env_options: Any,
    ) -> None:
        """``env``: a name or an env YAML (default: the class's env); ``tasks``: the selector of tasks
        rows may name; ``max_turns``: tool calls before the episode is submitted as it stands;
        ``record_dir``: where each episode is recorded; ``env_options``: ``make_env``'s (``reward``,
        ``action_timeout``, ``data_root``)."""
        self._env = env or self.default_env
        self._max_turns = max_turns
        self._timeout = call_timeout_s
        options = RolloutOptions(
            max_turns=max_turns,
            observation_limit=observation_limit,
            tasks=tasks,
            env_options=env_options,
            client="trl",
        )
        rollout = Rollout(self._env, options, on_record=background_loop.records_to(record_dir))
        self._rollout = background_loop.track(rollout)
        self._finalizer = weakref.finalize(self, background_loop.close_soon, rollout)
        self._failed: str | None = None

    def reset(self, task_id: str | None = None, **row: Any) -> str:
        """Start the row's task in a fresh sandbox; the text TRL appends to the prompt."""
        self._failed = None
        return self._call(self._start(task_id, row))

    def get_reward(self) -> float | None:
        """The episode's reward (see the module docstring)."""
        if self._failed is None and not self._rollout.done:
            try:
                self._turn(self._rollout.submit(None, forced=True))
            except EpisodeFailed:
                return None
        record = self._rollout.trajectory
        if self._failed is not None or record is None or record.outcome in ("env_error", "corrupt"):
            return None
        return float(record.reward or 0.0)

    # -- what the tools share ------------------------------------------------------------------
    def _run(self, command: str) -> str:
        return self._turn(self._rollout.step(command)).observation

    def _submit(self, answer: str | None) -> str:
        return self._turn(self._rollout.submit(answer)).observation

    def _turn(self, call: Any) -> Turn:
        if self._failed is not None or self._rollout.done:
            call.close()
            why = self._failed or "the answer was submitted"
            raise RuntimeError(f"the episode is over ({why}); no more tool calls run")
        try:
            return self._call(call)
        except EpisodeFailed as exc:
            self._failed = str(exc)
            raise

    def _call(self, coro: Any) -> Any:
        return background_loop.run(coro, timeout=self._timeout)

    async def _start(self, task_id: str | None, row: Mapping[str, Any]) -> str:
        turn = await self._rollout.reset(task_id, selector=row.get("selector"), seed=row.get("seed"))
        env = self._rollout.env
        assert env is not None  # (reset made it)
        settings: dict[str, Any] = {"max_turns": self._max_turns} if self._max_turns else {}
        try:
            system, task = episode_prompts(env, turn.observation, STRATEGY, **settings).opening()
        except BaseException:
            await self._rollout.end("the episode's prompts could not be made")
            raise
        prompt = row.get("prompt")
        messages = prompt if isinstance(prompt, list) else []
        has_system = any(isinstance(m, Mapping) and m.get("role") == "system" for m in messages)
        text = str(task.content) if has_system else f"{system.content}\n\n{task.content}"
        last = messages[-1].get("content") if messages and isinstance(messages[-1], Mapping) else prompt
        return f"\n\n{text}" if isinstance(last, str) and last.strip() else text

    def _close(self) -> None:
        """Remove the sandbox now (TRL never calls it; the process's exit does it otherwise)."""
        self._call(self._rollout.close("closed by its owner"))


class BashEnvironment(IntercodeEnvironment):
    """A Bash task in an isolated sandbox: run commands, then submit their last output."""

    default_env = "bash"

    def run_bash(self, command: str) -> str:
        """Run one Bash command in the task's sandbox and return its output.

        Args:
            command: The Bash command to run.
        """
        return self._run(command)

    def submit(self) -> str:
        """Finish the task: the output of your last command is the answer that is checked."""
        return self._submit(None)


class SQLEnvironment(IntercodeEnvironment):
    """A SQL task on a read-only MariaDB database: run queries, then submit the last result."""

    default_env = "sql"

    def run_sql(self, query: str) -> str:
        """Run one SQL query on the task's database and return its result rows.

        Args:
            query: The SQL query to run (MySQL dialect).
        """
        return self._run(query)

    def submit(self) -> str:
        """Finish the task: the result of your last query is the answer that is checked."""
        return self._submit(None)


class PythonEnvironment(IntercodeEnvironment):
    """A Python task in a persistent interpreter: define the function, then submit its name."""

    default_env = "python"

    def run_python(self, code: str) -> str:
        """Run Python code in the task's persistent interpreter and return what it prints or raises.

        Args:
            code: The Python code to run.
        """
        return self._run(code)

    def submit(self, answer: str) -> str:
        """Finish the task: hidden tests call the function you name.

        Args:
            answer: The name of the function the tests should call.
        """
        return self._submit(answer or None)


class CTFEnvironment(IntercodeEnvironment):
    """A capture-the-flag puzzle in a Bash sandbox: find the flag, then submit it."""

    default_env = "ctf"

    def run_bash(self, command: str) -> str:
        """Run one Bash command in the puzzle's sandbox and return its output.

        Args:
            command: The Bash command to run.
        """
        return self._run(command)

    def submit(self, answer: str) -> str:
        """Finish the puzzle with the flag you found.

        Args:
            answer: The whole flag, for example picoCTF{...}.
        """
        return self._submit(answer)


#: (action language, submit takes an answer) -> the class whose tools fit.
_CLASSES: dict[tuple[str, bool], type[IntercodeEnvironment]] = {
    ("bash", False): BashEnvironment,
    ("sql", False): SQLEnvironment,
    ("python", True): PythonEnvironment,
    ("bash", True): CTFEnvironment,
}


def environment_factory(env: str | Path, **options: Any) -> Callable[[], IntercodeEnvironment]:
    """A factory for ``GRPOTrainer(environment_factory=...)``: the class whose tools fit ``env``
    (a name or an env YAML), bound to it and to ``options`` (see :class:`IntercodeEnvironment`).
    It is a ``functools.partial`` of a module-level class, so it pickles (AsyncGRPOTrainer's workers)."""
    cls = env_class(env)
    chosen = _CLASSES.get((cls.action_language, cls.submit_takes_argument))
    if chosen is None:
        raise ConfigError(
            f"no TRL environment class for actions in {cls.action_language!r} with "
            f"{'an answer' if cls.submit_takes_argument else 'no answer'} at the submit; "
            f"the classes cover {sorted({language for language, _ in _CLASSES})}"
        )
    return functools.partial(chosen, str(env), **options)

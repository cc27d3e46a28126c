"""An env as Gymnasium's API over text: what a script, a test or a Gym-style loop drives.

``await env.gym.step("ls")`` runs a command and ``await env.gym.step("submit")`` submits (text is read
by :func:`~intercode_agents.envs.steps.read_action`, the one reader of action text); both answer with
``(observation, reward, terminated, truncated, info)``. ``env.gym.reset(task_id=...)`` is
``env.reset``. The env's own API (``step``/``submit`` returning a typed
:class:`~intercode_agents.envs.steps.StepResult`) is what the project's code uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from intercode_agents.envs.steps import StepResult, Submit, read_action

if TYPE_CHECKING:
    from intercode_agents.datasets import Task

GymStep = tuple[str, float, bool, bool, dict[str, Any]]


class Episodic(Protocol):
    """What the view needs of an env (an :class:`~intercode_agents.envs.base.Env`)."""

    async def reset(
        self, task_id: str | None = None, *, task: Task | None = None
    ) -> tuple[str, dict[str, Any]]: ...

    async def step(self, command: str) -> StepResult: ...

    async def submit(self, answer: str = "") -> StepResult: ...


class GymView:
    """Gymnasium's ``reset``/``step`` over an env (see the module docstring)."""

    def __init__(self, env: Episodic) -> None:
        self.env = env

    async def reset(
        self, task_id: str | None = None, *, task: Task | None = None
    ) -> tuple[str, dict[str, Any]]:
        return await self.env.reset(task_id, task=task)

    async def step(self, action: str) -> GymStep:
        read = read_action(action)
        if isinstance(read, Submit):
            return (await self.env.submit(read.answer)).gym()
        return (await self.env.step(read)).gym()

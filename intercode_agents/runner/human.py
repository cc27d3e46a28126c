"""A person at the terminal as the policy of an episode (``play`` and ``eval --model human``).

Input: one line is one action. A line ending in ``\\`` continues on the next line, and a line of
three backticks opens a block that the next such line closes (for multi-line Python). ``submit``
(with the function name for Python, the flag for CTF) ends the episode; ``:quit`` or end of input
submits the episode as it stands.

Lines are read by a daemon thread, so Ctrl-C never waits for a pending ``input()``.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from typing import TextIO

from rich.console import Console
from rich.panel import Panel

from intercode_agents.datasets import Task
from intercode_agents.envs.base import Env
from intercode_agents.envs.reward_view import agent_parts
from intercode_agents.envs.steps import StepResult
from intercode_agents.runner.direct import NextAction
from intercode_agents.trajectory import Trajectory

QUIT = ":quit"
FENCE = "```"
HELP = (
    "Type an action and press Enter. End a line with \\ to continue it; wrap multi-line code in ``` lines.\n"
    "`submit` ends the episode (Python: `submit FUNCTION_NAME`, CTF: `submit FLAG`); :quit submits as is."
)


class TerminalHuman:
    """Reads actions from ``stream`` (stdin) and shows observations on ``console``."""

    def __init__(self, stream: TextIO | None = None, console: Console | None = None) -> None:
        self.stream = stream or sys.stdin
        self.console = console or Console(highlight=False)
        self._lines: asyncio.Queue[str | None] | None = None

    def _start_reader(self) -> asyncio.Queue[str | None]:
        if self._lines is None:
            loop = asyncio.get_running_loop()
            lines: asyncio.Queue[str | None] = asyncio.Queue()

            def pump() -> None:
                for line in self.stream:
                    loop.call_soon_threadsafe(lines.put_nowait, line.rstrip("\n"))
                loop.call_soon_threadsafe(lines.put_nowait, None)

            threading.Thread(target=pump, name="human-input", daemon=True).start()
            self._lines = lines
        return self._lines

    async def _read_line(self, prompt: str) -> str | None:
        lines = self._start_reader()
        self.console.print(prompt, end="", markup=False)
        self.console.file.flush()
        return await lines.get()

    async def read_action(self, env: Env) -> str | None:
        """One action, or None at :quit or end of input."""
        while True:
            line = await self._read_line(f"{env.name}> ")
            if line is None or line.strip() == QUIT:
                return None
            if not line.strip():
                continue
            if line.strip().startswith(FENCE):
                return await self._read_block()
            parts = [line]
            while parts[-1].endswith("\\"):
                more = await self._read_line("... ")
                if more is None:
                    break
                parts.append(more)
            return "\n".join(parts)

    async def _read_block(self) -> str | None:
        body: list[str] = []
        while True:
            line = await self._read_line("... ")
            if line is None:
                return "\n".join(body) or None
            if line.strip().startswith(FENCE):
                return "\n".join(body)
            body.append(line)

    def next_action(self, env: Env) -> NextAction:
        async def next_action(turn: int, observation: str) -> str | None:
            return await self.read_action(env)

        return next_action

    def show_task(self, task: Task, env: Env) -> None:
        prompt = env.task_prompt(task)
        self.console.print(Panel(prompt, title=f"{task.id}", subtitle=f"reward: {env.reward_mode}"))
        self.console.print(HELP, markup=False)

    def show_observation(self, result: StepResult) -> None:
        if result.kind != "submit":
            self.console.print(result.observation, markup=False)

    def show_result(self, traj: Trajectory, env: Env) -> None:
        """The reward, and the parts of it a player may see (the record keeps them all)."""
        if traj.outcome == "env_error":
            self.console.print(f"[red]env error:[/] {traj.error}")
            return
        shown = agent_parts(env, traj.reward_parts)
        parts = ", ".join(f"{k}={v}" for k, v in shown.items() if not isinstance(v, str) or v)
        self.console.print(
            f"[bold]Reward: {traj.reward or 0.0:g}[/] ({traj.outcome})  {parts}", highlight=False
        )

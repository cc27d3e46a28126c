"""The jq env's class: JSON questions answered with shell commands (jq) in a sandbox.

It reuses the project's Bash env for the sandbox, the pool and the shell, and brings its own reward:
the output of the agent's last command must hold the same JSON values as the gold command's output
(formatting aside: ``jq -c`` and pretty output are equal). The gold runs on the host's order, in a
pristine sandbox of its own that the agent never touched, and the comparison happens on the host.
"""

from __future__ import annotations

import json
from typing import Any

from intercode_agents.datasets import Task
from intercode_agents.envs.bash.env import BashEnv
from intercode_agents.envs.bash.facts import run_gold
from intercode_agents.reward import RewardResult

WORKDIR = "/data"
_GOLD_OUTPUTS: dict[tuple[str, str], str | None] = {}  # (image id, gold) -> its output


def json_values(text: str) -> list[Any] | None:
    """The JSON values ``text`` holds one after another (jq prints a stream), or None if it is not JSON."""
    decoder, values, at = json.JSONDecoder(), [], 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at == len(text):
            return values or None
        try:
            value, at = decoder.raw_decode(text, at)
        except json.JSONDecodeError:
            return None
        values.append(value)


def _canonical(values: list[Any]) -> str:
    """One text per JSON value stream, so that ``true`` never equals ``1`` nor ``2.0`` equals ``2``."""
    return json.dumps(values, sort_keys=True)


class JqEnv(BashEnv):
    """Bash sessions in /data; submit scores the last output against the gold's, as JSON."""

    language = "bash"  # actions are shell commands: the Bash rules of the failure-mode tags
    action_language = "bash"  # the run_bash tool, and replies read as shell commands
    default_image = "jq"
    submit_description = "Finish the task: the JSON your last command printed is submitted as the answer."

    async def _prepare(self, task: Task) -> None:
        sb = await self.take_sandbox(task.image)
        self.shell = await sb.shell(workdir=WORKDIR)

    async def _gold_output(self, task: Task) -> str | None:
        key = (self._image_key(task), task.gold)
        if key not in _GOLD_OUTPUTS:
            sb, pool = await self.borrow(task.image, trusted=True)
            try:
                _GOLD_OUTPUTS[key] = await run_gold(sb, f"cd {WORKDIR} && {task.gold}", 30.0)
            finally:
                await pool.release(sb)
        return _GOLD_OUTPUTS[key]

    async def _score(self, submission: str) -> RewardResult:
        task = self._require_task()
        gold_output = await self._gold_output(task)
        expected = json_values(gold_output) if gold_output is not None else None
        if expected is None:
            return RewardResult(0.0, {"gold_failed": True}, note="the gold command printed no JSON")
        got = json_values(submission)
        parts = {"submission_is_json": got is not None, "values_expected": len(expected)}
        if got is not None and _canonical(got) == _canonical(expected):
            return RewardResult(1.0, parts | {"match": True})
        return RewardResult(0.0, parts | {"match": False})

"""A scripted chat model for the Ray tests: it answers each task with its gold command, but only once
a gate file exists, so that a test decides when the run's episodes may finish (a node that joins is
then sure to find work left, however fast the machine plays the golds).

It travels to the nodes by value (``register_pickle_by_value``): the nodes need not import ``tests``.
"""

from __future__ import annotations

import time
from pathlib import Path

from langchain_core.messages import BaseMessage

from intercode_agents.models.scripted import ScriptedChatModel

GATE_WAIT_S = 120.0  # the longest a reply waits for the gate (a test that never opens it still ends)


def gated_gold(gate: Path, golds: dict[str, str]) -> ScriptedChatModel:
    """Replies with the gold of the task (query -> gold command) the prompt asks, once ``gate`` exists."""

    def reply(messages: list[BaseMessage]) -> str:
        deadline = time.monotonic() + GATE_WAIT_S
        while not gate.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        text = "\n".join(m.text for m in messages)
        asked = [query for query in golds if query in text]
        return f"```bash\n{golds[max(asked, key=len)]}\n```" if asked else "```bash\nfalse\n```"

    return ScriptedChatModel([reply] * 1000, model_name="gated-gold")

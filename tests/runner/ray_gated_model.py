"""A scripted chat model for the Ray tests: it answers each task with its gold command, but only once
a gate file exists, so that a test decides when the run's episodes may finish (a node that joins is
then sure to find work left, however fast the machine plays the golds).

It travels to the nodes by value (``register_pickle_by_value``): the nodes need not import ``tests``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

GATE_WAIT_S = 120.0  # the longest a reply waits for the gate (a test that never opens it still ends)


class GatedGold(BaseChatModel):
    gate: str  # the file whose existence opens the gate
    golds: dict[str, str]  # task query -> its gold command

    @property
    def _llm_type(self) -> str:
        return "gated-gold"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        deadline = time.monotonic() + GATE_WAIT_S
        while not Path(self.gate).exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        text = "\n".join(str(m.content) for m in messages)
        asked = [q for q in self.golds if q in text]
        reply = f"```bash\n{self.golds[max(asked, key=len)]}\n```" if asked else "```bash\nfalse\n```"
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=reply))])

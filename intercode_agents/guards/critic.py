"""The critic: a chat model that checks a candidate answer before it is submitted.

It is given the task's question, the candidate (for Bash and SQL the last observation, for Python the
function name, for CTF the flag) and the last few actions with their observations. It never sees the
gold answer or a reward, and it never scores the state: a critic that asked the env for the reward
would be an oracle, and the guarded agent's numbers would mean nothing. Its prompts are data
(``prompts/critic.yaml``).

Before the model, cheap execution checks from what the actions returned: a Bash or SQL answer whose
action failed is an error message, a Python answer names a function no action defined, and nothing
can be checked when no action ran. Each of them vetoes without a model call.

The reply must start with ``VERDICT: ACCEPT`` or ``VERDICT: REJECT``; a reply that says neither
accepts (the critic may not hold an episode hostage), and the record says it was unclear.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

import yaml
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from intercode_agents.errors import ConfigError
from intercode_agents.paths import data_dir

VerdictSource = Literal["check", "model", "unclear"]
_VERDICT = re.compile(r"VERDICT\s*:\s*(ACCEPT|REJECT)", re.IGNORECASE)
CANDIDATE_CHARS = 2000
OBSERVATION_CHARS = 800
LANGUAGE_NAMES = {"bash": "Bash", "sql": "SQL (MySQL dialect)", "python": "Python", "ctf": "Bash"}


@dataclass(frozen=True)
class Seen:
    """One action the agent ran and what came back."""

    action: str
    observation: str
    errored: bool
    exit_code: int | None = None


@dataclass(frozen=True)
class Verdict:
    accepted: bool
    reasons: str
    source: VerdictSource
    input_tokens: int = 0
    output_tokens: int = 0


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[: limit // 2]}\n[...]\n{text[-limit // 2 :]}"


@cache
def _prompts(path: str) -> dict[str, str]:
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read the critic prompts {path}: {exc}") from exc
    if not isinstance(data, dict) or not all(isinstance(data.get(k), str) for k in ("system", "review")):
        raise ConfigError(f"{path} needs the templates 'system' and 'review'")
    return {"system": data["system"], "review": data["review"]}


def execution_check(env_name: str, candidate: str, history: list[Seen]) -> str | None:
    """Why the candidate fails on what the actions already showed (a veto without a model), or None."""
    actions = [seen for seen in history if seen.action.strip()]
    if not actions and env_name != "ctf":
        return "no action has run yet, so there is nothing to submit"
    if env_name in ("bash", "sql") and actions and actions[-1].errored:
        code = actions[-1].exit_code
        return (
            f"the last action failed{f' (exit code {code})' if code not in (None, 0) else ''}, so the answer "
            "would be its error message; fix it, or run the command whose output answers the task"
        )
    if env_name == "python" and candidate:
        name = re.escape(candidate)
        defined = re.compile(rf"^\s*(?:def\s+{name}\s*\(|{name}\s*=)", re.MULTILINE)
        if not any(defined.search(seen.action) for seen in actions):
            return f"no action defined a function named {candidate}"
    return None


class Critic:
    """Reviews candidates with ``model`` (see the module docstring)."""

    def __init__(
        self, model: BaseChatModel, *, observations: int = 3, prompt_file: str | None = None
    ) -> None:
        self.model = model
        self.observations = observations
        self.prompt_file = prompt_file or str(data_dir("prompts") / "critic.yaml")

    def messages(self, *, env_name: str, task: str, candidate: str, history: list[Seen]) -> list[Any]:
        prompts = _prompts(self.prompt_file)
        recent = history[-self.observations :] if self.observations else []
        lines = [
            f"$ {seen.action.strip()}\n{_cut(seen.observation, OBSERVATION_CHARS) or '(no output)'}"
            + (" [failed]" if seen.errored else "")
            for seen in recent
        ]
        values = {
            "language_name": LANGUAGE_NAMES.get(env_name, env_name),
            "task": task,
            "candidate": _cut(candidate, CANDIDATE_CHARS) or "(empty)",
            "recent": "\n\n".join(lines) or "(none)",
        }
        return [
            SystemMessage(content=prompts["system"].format(**values)),
            HumanMessage(content=prompts["review"].format(**values)),
        ]

    async def review(self, *, env_name: str, task: str, candidate: str, history: list[Seen]) -> Verdict:
        """The verdict on ``candidate``; model failures raise ``ModelCallFailed`` after its retries."""
        if reason := execution_check(env_name, candidate, history):
            return Verdict(False, reason, "check")
        from intercode_agents.models.calls import call_model

        reply = await call_model(
            self.model, self.messages(env_name=env_name, task=task, candidate=candidate, history=history)
        )
        text = reply.text.strip()
        found = _VERDICT.search(text)
        reasons = _cut(_VERDICT.sub("", text, count=1).strip(), 600)
        if found is None:
            return Verdict(True, reasons or text[:600], "unclear", reply.input_tokens, reply.output_tokens)
        accepted = found.group(1).upper() == "ACCEPT"
        return Verdict(accepted, reasons, "model", reply.input_tokens, reply.output_tokens)

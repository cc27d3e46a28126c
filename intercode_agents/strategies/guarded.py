"""Guarded (architecture C): ReAct with the safeguards of :mod:`intercode_agents.guards`.

Every action goes through a :class:`~intercode_agents.guards.Guard`: the SQL guard refuses what does
not only read, the Bash guard checkpoints the task files before a command that may destroy them (and
rolls it back when it fails or empties an input), the action ``rollback`` (``rollback start``)
restores them, and a critic reviews each submit and may send the agent back, at most ``max_vetoes``
times (a submit forced by the turn budget is not reviewed). The critic is the agent's own model
unless ``critic_model`` names another; its tokens are recorded in ``Trajectory.usage`` and counted in
the run's totals and cost. Each safeguard has its own switch (the :class:`GuardPolicy` fields are
settings of this strategy); the trajectory's steps record every refusal, checkpoint, rollback and veto.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from langchain_core.language_models import BaseChatModel

from intercode_agents.envs.steps import StepResult
from intercode_agents.guards import Guard, GuardPolicy
from intercode_agents.strategies.config import StrategyConfig
from intercode_agents.strategies.episode import EpisodeRun
from intercode_agents.strategies.react import ReAct
from intercode_agents.trajectory import ModelUsage

REVIEW_NOTE = "Before an answer is accepted, a reviewer checks it and may send it back with its reasons."


class GuardedConfig(StrategyConfig, GuardPolicy):
    """ReAct's settings plus the switches of each safeguard."""


class GuardedEpisodeRun(EpisodeRun):
    """An episode whose env steps go through a guard."""

    def __init__(self, *, guard: Guard, critic_spec: str | None = None, **parts: Any) -> None:
        super().__init__(**parts)
        self.guard = guard
        self.critic_spec = critic_spec  # None: the critic is the agent's own model
        notes = [self.env.guard_note] if guard.policy.sql_guard or guard.policy.bash_guard else []
        if guard.critic is not None:
            notes.append(REVIEW_NOTE)
        extra = " ".join(note for note in notes if note)
        if extra:
            self.values["environment"] = f"{self.values['environment']}\n\n{extra}"

    async def begin(self) -> None:
        await self._env_call("guard start", self.guard.begin())
        self._keep_record()

    async def _kept(self, call: Awaitable[StepResult]) -> StepResult:
        try:
            return await call
        finally:
            self._keep_record()

    def env_step(self, command: str) -> Awaitable[StepResult]:
        """The model's action text through the guard (``rollback`` is one of its actions)."""
        return self._kept(self.guard.act(command, turn=self.turns_used))

    def env_submit(self, answer: str, *, forced: bool = False) -> Awaitable[StepResult]:
        return self._kept(self.guard.submit(answer, review=not forced))

    def _keep_record(self) -> None:
        """The guard's policy, counts and critic usage, on the trajectory."""
        summary = self.guard.summary()
        self.trajectory.guards = summary
        critic = summary["critic"]
        if critic.get("calls") or critic.get("input_tokens") or critic.get("output_tokens"):
            self.trajectory.usage = [
                ModelUsage(
                    role="critic",
                    # priced as the run prices models: by the spec (the agent's, or critic_model)
                    model=self.critic_spec or self.trajectory.model or critic.get("model"),
                    input_tokens=critic.get("input_tokens", 0),
                    output_tokens=critic.get("output_tokens", 0),
                    calls=critic.get("calls", 0),
                )
            ]


class Guarded(ReAct):
    name = "guarded"
    config_model = GuardedConfig
    prompt_set = "react"

    def episode(self, **parts: Any) -> EpisodeRun:
        config = self.config
        assert isinstance(config, GuardedConfig)
        model: BaseChatModel = parts["model"]
        critic = self._critic_model(model) if config.critic else None
        policy = GuardPolicy(**{name: getattr(config, name) for name in GuardPolicy.model_fields})
        critic_spec = getattr(config, "critic_model", None) or None
        return GuardedEpisodeRun(
            guard=Guard(parts["env"], policy, critic_model=critic), critic_spec=critic_spec, **parts
        )

    def _critic_model(self, agent_model: BaseChatModel) -> BaseChatModel:
        spec = getattr(self.config, "critic_model", None)
        if not spec:
            return agent_model
        from intercode_agents.models import resolve_model

        return resolve_model(spec)

"""SkyRL-gym's ``BaseTextEnv`` over our envs: the model's whole reply in, the next user message out.

SkyRL's generator makes one env per trajectory (``skyrl_gym.make(env_class, env_config=...,
extras=row_extras)``) on its event-loop thread, then calls ``init``, every ``step`` and ``close``
synchronously, from a worker thread or from that loop. So construction is cheap (no sandbox, no
loop), and each call runs our async episode on the process's adapter loop
(:mod:`~intercode_agents.integrations.background_loop`), where every env of the worker process shares
the warm sandbox pools.

- ``init(prompt)`` starts the episode of the row's ``task_id`` (``extras``; or a task drawn from
  ``selector`` with ``seed``) and returns the conversation the ReAct strategy opens it with: its
  system text with the env's texts and demo, then the task. A system message of the row's own prompt
  replaces ours.
- ``step(reply)`` reads the model's whole reply with the strategies' parser (``Action:`` lines, a
  fenced block, a bare command; ``submit``) and returns the next user message in the strategy's
  template (the observation, the last-turn warning, or why the reply held no action), the reward
  (0.0 until the submit), ``done`` and the step's ``info`` as metadata: never a gold or a hidden part.
  The reply that uses the last of ``max_turns`` (SkyRL sets it in ``extras``) ends the episode with a
  submit of its state.
- The episode's sandbox is released as soon as it is done (SkyRL does not call ``close`` when a step
  raises); one the env gave up on (the engine failed: a harness fault) ends the episode with reward 0
  and ``metadata["env_error"]``, counted in :meth:`get_metrics`, instead of failing the whole batch.
  An env object collected without ``close`` is closed on the loop, and the process's exit closes
  whatever is left.

``env_config`` (SkyRL's ``environment.skyrl_gym.<env_class>`` section; ``{}`` by default) takes
``reward``, ``action_timeout``, ``max_turns`` (when the row sets none), ``observation_limit``,
``tasks`` (the selector of tasks rows may name), ``prompt_file`` (the react prompts replaced),
``record_dir`` (records of every episode, one file per process) and ``call_timeout_s``.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from langchain_core.messages import convert_to_openai_messages
from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput, ConversationType

from intercode_agents.errors import ConfigError
from intercode_agents.integrations import background_loop
from intercode_agents.runner.rollout import EpisodeFailed, Rollout, RolloutOptions, Turn
from intercode_agents.strategies.opening import EpisodePrompts, episode_prompts
from intercode_agents.strategies.parsing import InvalidReply, parse_reply
from intercode_agents.tools.observation import DEFAULT_OBSERVATION_LIMIT

DEFAULT_MAX_TURNS = 10
STRATEGY = "react"  # whose prompts and reply format the env speaks
ENV_OPTIONS = ("reward", "action_timeout", "data_root")
CONFIG_KEYS = (
    *ENV_OPTIONS,
    "max_turns",
    "observation_limit",
    "tasks",
    "prompt_file",
    "record_dir",
    "call_timeout_s",
)


def _plain(config: Any) -> dict[str, Any]:
    """``env_config`` as a dict (SkyRL passes an OmegaConf section), its keys checked."""
    if config is None:
        return {}
    if not isinstance(config, Mapping):
        try:
            from omegaconf import OmegaConf

            config = OmegaConf.to_container(config, resolve=True)
        except Exception as exc:
            raise ConfigError(f"env_config must be a mapping, got {type(config).__name__}") from exc
    plain = dict(config)
    unknown = sorted(set(plain) - set(CONFIG_KEYS))
    if unknown:
        raise ConfigError(f"unknown env_config keys {unknown}; the keys are {', '.join(CONFIG_KEYS)}")
    return plain


class IntercodeTextEnv(BaseTextEnv):
    """One episode of one of our envs as a SkyRL-gym text env (see the module docstring)."""

    def __init__(
        self, env_config: Any = None, extras: Mapping[str, Any] | None = None, *, env: str | Path
    ) -> None:
        super().__init__()
        config = _plain(env_config)
        self.extras = dict(extras or {})
        self.max_turns = int(self.extras.get("max_turns") or config.get("max_turns") or DEFAULT_MAX_TURNS)
        self.call_timeout_s: float | None = config.get("call_timeout_s")
        self.prompt_file: str | None = config.get("prompt_file")
        options = RolloutOptions(
            max_turns=self.max_turns,
            observation_limit=int(config.get("observation_limit", DEFAULT_OBSERVATION_LIMIT)),
            tasks=config.get("tasks"),
            env_options={key: config[key] for key in ENV_OPTIONS if key in config},
            client="skyrl",
        )
        rollout = Rollout(env, options, on_record=background_loop.records_to(config.get("record_dir")))
        self._rollout = background_loop.track(rollout)
        self._finalizer = weakref.finalize(self, background_loop.close_soon, rollout)
        self._prompts: EpisodePrompts | None = None
        self._language = "bash"
        self._metrics: dict[str, Any] = {}

    # -- SkyRL's calls ---------------------------------------------------------------------------
    def init(self, prompt: ConversationType) -> tuple[ConversationType, dict[str, Any]]:
        conversation, info = self._call(self._open())
        own_system = [message for message in prompt or [] if message.get("role") == "system"]
        if own_system:
            conversation = [*own_system, *(m for m in conversation if m.get("role") != "system")]
        return conversation, info

    def step(self, action: str) -> BaseTextEnvStepOutput:
        self.turns += 1
        try:
            turn, message = self._call(self._act(action))
        except EpisodeFailed as exc:
            self._metrics["env_error"] = 1
            self._call(self._rollout.close("the env failed"))
            return BaseTextEnvStepOutput(
                observations=[], reward=0.0, done=True, metadata={"env_error": str(exc)}
            )
        record = self._rollout.trajectory
        if turn.done and record is not None:
            self._metrics |= {
                "solved": float(record.solved),
                "reward": turn.reward,
                "turns": self._rollout.turn,
            }
        observations = [] if turn.done else [{"role": "user", "content": message}]
        return BaseTextEnvStepOutput(
            observations=observations, reward=turn.reward, done=turn.done, metadata=turn.info
        )

    def close(self) -> None:
        self._call(self._rollout.close("the trainer closed the env"))

    def get_metrics(self) -> dict[str, Any]:
        return {"env_error": 0, **self._metrics}

    # -- on the adapter loop ------------------------------------------------------------------
    async def _open(self) -> tuple[ConversationType, dict[str, Any]]:
        extras = self.extras
        turn = await self._rollout.reset(
            extras.get("task_id"), selector=extras.get("selector"), seed=extras.get("seed")
        )
        env = self._rollout.env
        assert env is not None  # (reset made it)
        self._language = env.action_language
        settings: dict[str, Any] = {"max_turns": self.max_turns}
        if self.prompt_file:
            settings["prompt_file"] = self.prompt_file
        try:
            self._prompts = episode_prompts(env, turn.observation, STRATEGY, **settings)
        except BaseException:
            await self._rollout.close("the episode's prompts could not be made")  # SkyRL will not close
            raise
        conversation = convert_to_openai_messages(self._prompts.opening())
        return conversation, turn.info

    async def _act(self, reply: str) -> tuple[Turn, str]:
        """Carry out the reply; the message the model reads next (empty once the episode is over)."""
        prompts, rollout = self._prompts, self._rollout
        if prompts is None:
            raise ConfigError("step() before init(): SkyRL calls init first")
        left = self.max_turns - rollout.turn - 1  # turns left after this one
        parsed = parse_reply(reply, language=self._language)
        if isinstance(parsed, InvalidReply):
            feedback = prompts.render("invalid", turns_left=left, reason=parsed.reason)
            turn = await rollout.invalid(reply, feedback)
            return turn, turn.observation
        if parsed.is_submit:
            turn = await rollout.submit(parsed.submit_argument or None)
            return turn, turn.observation
        turn = await rollout.step(parsed.action)
        template = "last_turn" if left == 1 else "observation"
        return turn, prompts.render(template, turns_left=left, observation=turn.observation)

    def _call(self, coro: Any) -> Any:
        result = background_loop.run(coro, timeout=self.call_timeout_s)
        if self._rollout.done and self._rollout.env is not None:  # done: the sandbox goes at once
            background_loop.run(self._rollout.close("the episode is over"))
        return result

"""One Inspect sample's episode: our env, our turn rules, our record.

The sandbox provider resets the env on the sample's task (:class:`SampleEpisode`); what plays it is
decided by the solver:

- **an agent through our tools** (:class:`AgentPlay`): our own solver, or any Inspect agent given
  :func:`~intercode_agents.integrations.inspect.tools.intercode_tools`. Every tool call goes through
  the same :class:`~intercode_agents.strategies.agent_episode.AgentGate` as a user's agent under our
  runner (``--agent``): it counts calls against the turn budget, refuses them once the budget is spent
  or the episode submitted, runs them through our toolkit (the observations a model reads are our
  tools' own) and records each as a step of an :class:`~intercode_agents.strategies.episode.EpisodeRun`
  set up as the ``tool_calling`` strategy sets it up (its prompts, its settings in the record's
  context);
- **the gold policy** (:class:`GoldPlay`): the env's gold actions, read and recorded exactly as our
  ``gold`` command plays them (:func:`~intercode_agents.runner.direct.play_actions`).

:meth:`SampleEpisode.finish` ends it as our runner does: an episode not submitted is submitted as it
stands (the forced submit), scored by the env in its reward mode, and its record settled.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.tools import BaseTool

from intercode_agents import __version__
from intercode_agents.envs import Env, EpisodeRecorder
from intercode_agents.models.calls import ModelReply
from intercode_agents.runner.direct import DIRECT, gold_actions, play_actions, scripted
from intercode_agents.strategies import get_strategy
from intercode_agents.strategies.agent_episode import AgentGate
from intercode_agents.strategies.episode import EnvFailure, EpisodeRun
from intercode_agents.tools.env_tools import EnvToolkit
from intercode_agents.trajectory import Trajectory

#: The strategy whose prompts and settings an Inspect agent episode takes (its loop: one turn per tool
#: call, a reply with no tool call a reminder and a turn, the episode submitted when the turns run out).
AGENT_STRATEGY = "tool_calling"


@dataclass(frozen=True)
class AgentSettings:
    """The turn budget and context handling of an agent episode (recorded in its context)."""

    turns: int = 10
    observation_limit: int = 4000
    history_turns: int | None = None

    def strategy_settings(self) -> dict[str, Any]:
        settings: dict[str, Any] = {"max_turns": self.turns, "observation_limit": self.observation_limit}
        if self.history_turns is not None:
            settings["history_turns"] = self.history_turns
        return settings


class AgentPlay:
    """An agent's episode: the run (prompts, turns, record) and the gate every tool call passes."""

    def __init__(
        self, episode: SampleEpisode, settings: AgentSettings, *, strategy: str, model: str, epoch: int
    ) -> None:
        env = episode.env
        self.settings = settings
        self.strategy = get_strategy(AGENT_STRATEGY, **settings.strategy_settings())
        trajectory = Trajectory(
            task_id=episode.info.get("task_id", ""),
            env=env.name,
            strategy=strategy,
            model=model,
            epoch=epoch,
            reward_mode=env.reward_mode,
            execution=env.execution,
            context=self.strategy.context() | {"language": env.language, "harness": _harness()},
            started_at=time.time(),
            question=episode.question,
            group=dict(episode.info.get("group") or {}),
            image_id=getattr(env, "image_id", None) or episode.info.get("image"),
        )
        self.run = EpisodeRun(
            env=env,
            model=None,
            config=self.strategy.config,
            prompts=self.strategy.prompts,
            trajectory=trajectory,
            query=episode.question,
        )
        self.gate = AgentGate(self.run)
        self.tools: dict[str, BaseTool] = {
            tool.name: tool
            for tool in EnvToolkit(env=env, observation_limit=settings.observation_limit).get_tools()
        }
        self.started = time.perf_counter()

    def replied(self, text: str, tool_calls: list[dict[str, Any]], tokens: tuple[int, int]) -> ModelReply:
        """A model reply of our solver's loop: its tool calls will claim its text and tokens."""
        message = AIMessage(
            content=text,
            tool_calls=tool_calls,
            usage_metadata={
                "input_tokens": tokens[0],
                "output_tokens": tokens[1],
                "total_tokens": sum(tokens),
            },
        )
        if tool_calls:
            self.gate.model_replied(message)
        else:  # (counted by the solver, as tool_calling counts a reply with no tool call)
            self.run.trajectory.input_tokens += tokens[0]
            self.run.trajectory.output_tokens += tokens[1]
        return ModelReply(message, tokens[0], tokens[1])

    async def call(self, name: str, args: dict[str, Any], call_id: str | None) -> str:
        """Run one tool call through the gate: what the model reads. A call refused or failed raises
        :class:`~langchain_core.tools.ToolException` (its message is the model's); an env that failed
        raises :class:`EnvFailure` (the harness's fault: the sample errs)."""
        content, _ = await self.gate.call(self.tools[name], args, call_id)
        return content

    def raise_env_failure(self) -> None:
        if self.gate.env_failure is not None:
            raise self.gate.env_failure

    async def finish(self) -> Trajectory:
        self.gate.close()
        self.raise_env_failure()
        if not self.run.env.done:
            await self.run.submit(forced=True)  # (an env failure here is the harness's: it goes up)
        trajectory = self.run.trajectory
        trajectory.settle()
        trajectory.duration_s = time.perf_counter() - self.started
        return trajectory


class GoldPlay:
    """The gold policy, recorded as our ``gold`` command records it (strategy ``direct``, model ``gold``)."""

    def __init__(self, episode: SampleEpisode, epoch: int) -> None:
        env = episode.env
        context = {"max_turns": None, "policy": "gold", "language": env.language}
        self.recorder = EpisodeRecorder(env, strategy=DIRECT, model="gold", epoch=epoch, context=context)
        self.recorder.started(episode.question, episode.info)
        self.env = env
        self.actions = gold_actions(env._require_task(), env)

    async def play(self) -> str:
        """Play the gold's actions; the last observation (what the gold's submit returned)."""
        await play_actions(self.env, scripted(self.actions), self.recorder)
        return self.recorder.trajectory.steps[-1].observation if self.recorder.trajectory.steps else ""

    async def finish(self) -> Trajectory:
        if not self.env.done:
            await play_actions(self.env, scripted([]), self.recorder)  # (a submit, as the runner's)
        return self.recorder.finish()


@dataclass
class SampleEpisode:
    """The episode of one sample: the env reset on its task, the question it gave, and its player."""

    env: Env
    question: str
    info: dict[str, Any]
    player: AgentPlay | GoldPlay | None = field(default=None)

    def agent(self, settings: AgentSettings, *, strategy: str, model: str, epoch: int) -> AgentPlay:
        """The agent play of this episode (made at the first call: our solver's, or another agent's)."""
        if isinstance(self.player, GoldPlay):
            raise EnvFailure("this sample's episode is played by the gold policy, not by an agent")
        if self.player is None:
            self.player = AgentPlay(self, settings, strategy=strategy, model=model, epoch=epoch)
        return self.player

    def gold(self, epoch: int) -> GoldPlay:
        if self.player is not None:
            raise EnvFailure("this sample's episode already has a player; the gold must play it alone")
        player = self.player = GoldPlay(self, epoch)
        return player

    async def finish(self, settings: AgentSettings, *, strategy: str, model: str, epoch: int) -> Trajectory:
        """The episode's record, submitted as it stands if nobody submitted (an episode no one
        played is the empty episode: nothing ran, the submit scores the pristine state)."""
        player = self.player or self.agent(settings, strategy=strategy, model=model, epoch=epoch)
        trajectory = await player.finish()
        trajectory.epoch = epoch
        trajectory.model = trajectory.model or model  # (a record begun by a tool call has none yet)
        return trajectory


def _harness() -> dict[str, str]:
    import inspect_ai

    return {"name": "inspect_ai", "version": inspect_ai.__version__, "intercode_agents": __version__}

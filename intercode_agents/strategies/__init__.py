"""Prompting strategies: a chat model plays one episode of an env and returns a Trajectory.

``get_strategy(name, **settings)`` gives ``try_again``, ``react``, ``plan_solve``, ``tool_calling``,
``single_shot`` (one action, then submit) or ``guarded`` (ReAct with the safeguards of
:mod:`intercode_agents.guards`); subclass :class:`Strategy` (and ``register_strategy``) for your own.
"""

from intercode_agents.strategies.base import Strategy
from intercode_agents.strategies.config import StrategyConfig
from intercode_agents.strategies.episode import EnvFailure, EpisodeRun, TurnResult
from intercode_agents.strategies.guarded import Guarded, GuardedConfig
from intercode_agents.strategies.parsing import InvalidReply, ParsedAction, parse_plan, parse_reply
from intercode_agents.strategies.plan_solve import PlanSolve, PlanSolveConfig
from intercode_agents.strategies.prompts import PromptSet, load_prompts
from intercode_agents.strategies.react import ReAct
from intercode_agents.strategies.registry import available_strategies, get_strategy, register_strategy
from intercode_agents.strategies.single_shot import SingleShot
from intercode_agents.strategies.tool_calling import ToolCalling
from intercode_agents.strategies.try_again import TryAgain

__all__ = [
    "EnvFailure",
    "EpisodeRun",
    "Guarded",
    "GuardedConfig",
    "InvalidReply",
    "ParsedAction",
    "PlanSolve",
    "PlanSolveConfig",
    "PromptSet",
    "ReAct",
    "SingleShot",
    "Strategy",
    "StrategyConfig",
    "ToolCalling",
    "TryAgain",
    "TurnResult",
    "available_strategies",
    "get_strategy",
    "load_prompts",
    "parse_plan",
    "parse_reply",
    "register_strategy",
]

"""Safeguards for agents: SQL and Bash guards, checkpoints and rollback, a critic, as one layer.

``Guard(env, GuardPolicy(...), critic_model=model)`` wraps an episode; ``await guard.step(action)``
is ``env.step`` with the safeguards. The ``guarded`` strategy, the LangChain middleware
(:class:`intercode_agents.tools.GuardMiddleware`) and the MCP server all use it. See
:mod:`intercode_agents.guards.guard`.
"""

from intercode_agents.guards.checkpoint import (
    Checkpoint,
    CheckpointTooLarge,
    Restored,
    restore_checkpoint,
    take_checkpoint,
)
from intercode_agents.guards.critic import Critic, Seen, Verdict
from intercode_agents.guards.guard import Guard, NothingToRollBack, Prepared
from intercode_agents.guards.policy import GuardPolicy

__all__ = [
    "Checkpoint",
    "CheckpointTooLarge",
    "Critic",
    "Guard",
    "GuardPolicy",
    "NothingToRollBack",
    "Prepared",
    "Restored",
    "Seen",
    "Verdict",
    "restore_checkpoint",
    "take_checkpoint",
]

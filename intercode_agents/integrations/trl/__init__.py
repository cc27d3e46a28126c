"""Environment classes for TRL's GRPO trainer (``GRPOTrainer(environment_factory=...)``).

``environment_factory("bash")`` (or ``BashEnvironment``, ``SQLEnvironment``, ``PythonEnvironment``,
``CTFEnvironment`` themselves) is what the trainer takes; see
:mod:`intercode_agents.integrations.trl.env`. TRL itself is not imported: the classes have the shape
its trainer reads.
"""

from intercode_agents.integrations.trl.env import (
    BashEnvironment,
    CTFEnvironment,
    IntercodeEnvironment,
    PythonEnvironment,
    SQLEnvironment,
    environment_factory,
)

__all__ = [
    "BashEnvironment",
    "CTFEnvironment",
    "IntercodeEnvironment",
    "PythonEnvironment",
    "SQLEnvironment",
    "environment_factory",
]

"""What Inspect loads through the package's entry point (``[project.entry-points.inspect_ai]``).

Inspect imports this module when it looks up a name under ``intercode_agents/`` (the task
``intercode_agents/intercode``) or a sandbox type it does not know (``intercode``); importing it runs
the decorators that register the task, the solvers, the scorer, the tools' metrics and the sandbox
provider.
"""

from intercode_agents.integrations.inspect.sandbox import IntercodeSandbox
from intercode_agents.integrations.inspect.scorer import intercode_scorer
from intercode_agents.integrations.inspect.solvers import intercode_agent, intercode_gold
from intercode_agents.integrations.inspect.tasks import intercode

__all__ = ["IntercodeSandbox", "intercode", "intercode_agent", "intercode_gold", "intercode_scorer"]

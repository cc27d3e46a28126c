"""LangChain tools over our environments and sandboxes.

``EnvToolkit(env=env)`` gives ``run_<language>`` and ``submit`` bound to one
episode; ``SandboxToolkit(sandbox=sb)`` gives ``run_bash`` in a bare sandbox. The tools are async
(``await tool.ainvoke(...)``), answer with content for the model and an artifact for programs, and
turn every problem into a message for the model instead of an exception.

``GuardMiddleware`` (in :mod:`intercode_agents.tools.guard_middleware`, which needs the ``langchain``
package) puts the safeguards of :mod:`intercode_agents.guards` around these tools in ``create_agent``.
"""

from typing import Any

from intercode_agents.tools.env_tools import (
    EnvToolkit,
    RunBashTool,
    RunPythonTool,
    RunSqlTool,
    SubmitTool,
    env_lock,
    tool_language,
)
from intercode_agents.tools.observation import DEFAULT_OBSERVATION_LIMIT, model_view, truncate_middle
from intercode_agents.tools.sandbox_tools import SandboxBashTool, SandboxToolkit

__all__ = [
    "DEFAULT_OBSERVATION_LIMIT",
    "EnvToolkit",
    "RunBashTool",
    "RunPythonTool",
    "RunSqlTool",
    "SandboxBashTool",
    "SandboxToolkit",
    "SubmitTool",
    "env_lock",
    "model_view",
    "tool_language",
    "truncate_middle",
]


def __getattr__(name: str) -> Any:
    if name in ("GuardMiddleware", "RollbackTool"):  # langchain (the agents extra) is imported on demand
        from intercode_agents.tools import guard_middleware

        return getattr(guard_middleware, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

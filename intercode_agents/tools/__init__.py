"""LangChain tools over our environments and sandboxes.

``EnvToolkit(env=env)`` (also ``env.toolkit()``) gives ``run_<language>`` and ``submit`` bound to one
episode; ``SandboxToolkit(sandbox=sb)`` gives ``run_bash`` in a bare sandbox. The tools are async
(``await tool.ainvoke(...)``), answer with content for the model and an artifact for programs, and
turn every problem into a message for the model instead of an exception.
"""

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

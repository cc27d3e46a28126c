"""intercode-agents: interactive coding environments (Bash, SQL, Python, CTF) as async LangChain tools."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from intercode_agents.envs import make_env


def __getattr__(name: str) -> Any:  # lazy, so `import intercode_agents` stays cheap
    if name == "make_env":
        from intercode_agents.envs import make_env

        return make_env
    raise AttributeError(name)


__all__ = ["__version__", "make_env"]

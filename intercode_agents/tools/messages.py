"""Messages our tools give instead of crashing: bad arguments, and synchronous use."""

from __future__ import annotations

from pydantic import ValidationError

from intercode_agents.errors import ConfigError


def bad_arguments(exc: ValidationError) -> str:
    """What the model reads when its tool arguments do not fit the tool's schema."""
    problems = "; ".join(
        f"{'.'.join(str(part) for part in error['loc']) or 'arguments'}: {error['msg']}"
        for error in exc.errors()
    )
    return f"the tool arguments are not valid ({problems})"


def async_only(tool_name: str) -> ConfigError:
    """The error a synchronous call (``tool.invoke``, ``agent.invoke``) raises.

    An env's sandboxes live on the event loop that created them, so a tool cannot run them from a
    fresh loop; the caller has to use the async API on that loop instead.
    """
    return ConfigError(
        f"the {tool_name} tool is async-only: call `await tool.ainvoke(...)` "
        "(or `await agent.ainvoke(...)` / `agent.astream(...)`) on the event loop that owns the env"
    )

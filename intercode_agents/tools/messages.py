"""Messages our tools give instead of crashing: bad arguments, and synchronous use."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import ValidationError
from pydantic.v1 import ValidationError as ValidationErrorV1

from intercode_agents.errors import ConfigError

#: A tool's ``handle_validation_error`` as LangChain calls it (with v1's error for a v1 schema).
ArgumentsErrorHandler = Callable[[ValidationError | ValidationErrorV1], str]


def bad_arguments(exc: ValidationError | ValidationErrorV1) -> str:
    """What the model reads when its tool arguments do not fit the tool's schema (a tool whose
    schema is a pydantic v1 model gets v1's error, which reads the same)."""
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

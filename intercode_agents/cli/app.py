"""The Typer application and the error policy: a bad argument is one clear line, never a traceback."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from intercode_agents.errors import IntercodeError

F = TypeVar("F", bound=Callable[..., Any])

app = typer.Typer(
    name="intercode-agents",
    help="Interactive coding environments (Bash, SQL, Python, CTF) in Docker sandboxes, as LangChain tools.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console()
err_console = Console(stderr=True)


def friendly(fn: F) -> F:
    """Turn the project's typed errors into one red line and exit code 2."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (IntercodeError, FileNotFoundError) as exc:
            # The message is text, not markup: a "[...]" in it (a path, an option) is printed as is.
            err_console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
            raise typer.Exit(2) from None

    return wrapper  # type: ignore[return-value]

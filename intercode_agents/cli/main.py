"""The entry point: every command module attached to the Typer application, then run.

Each command module imports :mod:`.app` and decorates its functions with ``@app.command``; importing
them here is what registers the commands, so that no command module imports another's registration
and the application module imports none of them.
"""

from __future__ import annotations

from intercode_agents.cli import (  # noqa: F401 - imported for their commands
    data_cmds,
    eval_cmd,
    export_cmds,
    image_cmds,
    mcp_cmds,
    model_cmds,
    rescore_cmds,
    run_cmds,
    serve_cmds,
    view_cmd,
)
from intercode_agents.cli.app import app


def main() -> None:
    app(prog_name="intercode-agents")


__all__ = ["app", "main"]

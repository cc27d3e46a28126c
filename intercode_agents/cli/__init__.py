"""The ``intercode-agents`` command line. Each sub-command lives in its own module."""

from __future__ import annotations

from intercode_agents.cli.main import app, main

__all__ = ["app", "main"]

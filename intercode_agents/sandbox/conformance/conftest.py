"""The suite's fixtures and hooks when it runs on its own (``pytest --pyargs
intercode_agents.sandbox.conformance``); see :mod:`.fixtures`."""

from intercode_agents.sandbox.conformance.fixtures import *  # noqa: F403

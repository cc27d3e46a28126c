"""The MCP server over our episodes (``intercode-agents mcp``; needs the ``mcp`` extra). See
:mod:`intercode_agents.mcp_server.server`."""

from intercode_agents.runner.episode_registry import (
    EpisodeError,
    EpisodeRegistry,
    ServerEpisode,
    ServerOptions,
)

__all__ = ["EpisodeError", "EpisodeRegistry", "ServerEpisode", "ServerOptions"]

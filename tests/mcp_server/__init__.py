"""Tests of intercode_agents.mcp_server."""

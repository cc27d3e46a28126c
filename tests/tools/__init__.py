"""Tests of intercode_agents.tools."""

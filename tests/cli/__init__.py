"""Tests of intercode_agents.cli."""

"""Tests of intercode_agents.guards."""

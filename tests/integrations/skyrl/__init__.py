"""Tests of intercode_agents.integrations.skyrl."""

"""Tests of intercode_agents.integrations.inspect."""

"""Tests of intercode_agents.integrations.harbor."""

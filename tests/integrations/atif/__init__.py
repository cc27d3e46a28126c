"""Tests of intercode_agents.integrations.atif."""

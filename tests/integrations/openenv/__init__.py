"""Tests of intercode_agents.integrations.openenv."""

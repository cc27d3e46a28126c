"""Tests of intercode_agents.sandbox."""

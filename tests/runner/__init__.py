"""Tests of intercode_agents.runner."""

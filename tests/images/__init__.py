"""Tests of intercode_agents.images."""

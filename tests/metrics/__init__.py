"""Tests of intercode_agents.metrics."""

"""Tests of intercode_agents.strategies."""

"""Tests of intercode_agents.report."""

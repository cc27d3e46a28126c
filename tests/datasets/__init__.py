"""Tests of intercode_agents.datasets."""

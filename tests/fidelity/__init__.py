"""Tests of intercode_agents.fidelity."""

"""Tests of intercode_agents.envs.python."""

"""Tests of intercode_agents.envs.sql."""

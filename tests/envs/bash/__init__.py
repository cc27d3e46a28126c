"""Tests of intercode_agents.envs.bash."""

"""Tests of intercode_agents.models."""

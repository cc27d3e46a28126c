"""The intercode-agents test suite (real Docker engine, real images)."""

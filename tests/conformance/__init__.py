"""The sandbox conformance suite, run once per backend (see conftest.py)."""

"""The SQL isolation policy: which statements an episode may send to the shared server."""

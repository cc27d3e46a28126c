"""The SQL family: Spider (and WikiSQL, and the mini set) on read-only MariaDB servers.

``env.py`` (the :class:`SqlEnv`), ``server.py`` (the agents' and the gold's servers and their
accounts), ``gold.py`` (gold queries on the gold server, cached), ``reward.py`` (multiset IoU times
Kendall tau), ``lexer.py`` and ``isolation.py`` (the isolation policy in front of the shared server)
and ``guard.py`` (the optional read-only guard).
"""

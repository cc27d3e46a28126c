"""Our envs in Inspect (inspect-ai, the ``inspect`` extra): a task, our tools, our scorer, a sandbox
provider, and Inspect logs read back as our records.

- :mod:`.tasks`: the ``intercode`` task (``inspect eval intercode_agents/intercode -T env=bash``);
- :mod:`.sandbox`: the ``intercode`` sandbox provider, backed by our pools and backends;
- :mod:`.episode`: one sample's episode (our env, turn rules and record), played by
  :mod:`.solvers` (our tool-calling loop on Inspect's model, or the gold) through :mod:`.tools`
  (``run_bash``/``run_sql``/``run_python``/``submit``), ended and scored by :mod:`.scorer`;
- :mod:`.log_import`: an Inspect log (``.eval`` or ``.json``) as our trajectory records, for the viewer.

Nothing here is imported by ``import intercode_agents``; Inspect imports :mod:`._registry` through
the package's entry point.
"""

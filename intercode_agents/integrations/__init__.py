"""Other frameworks' front ends and formats: Inspect tasks and sandbox, Harbor task folders, ATIF.

A layer beside :mod:`intercode_agents.mcp_server`: it may import every layer below it, nothing below
imports it. Each framework's library is an optional extra, imported only by the modules that need it
(never by ``import intercode_agents``). docs/INTEROP.md says what maps to what and what is lost.

- :mod:`.inspect`: our envs as Inspect tasks (``inspect eval intercode_agents/intercode``), our tools
  and scorer in Inspect's form, the ``intercode`` sandbox provider, and Inspect logs read as records;
- :mod:`.harbor`: Harbor task folders (``intercode-agents export harbor``) and the verifier that runs
  inside them;
- :mod:`.atif`: ATIF trajectories written from and read into our records.
"""

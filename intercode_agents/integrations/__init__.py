"""Other frameworks' front ends and formats: evaluation harnesses (Inspect, Harbor, ATIF) and RL
trainers (OpenEnv, SkyRL, TRL).

A layer beside :mod:`intercode_agents.mcp_server`: it may import every layer below it, nothing below
imports it. Each framework's library is an optional extra, imported only by the modules that need it
(never by ``import intercode_agents``). docs/INTEROP.md and docs/TRAINING.md say what maps to what.

- :mod:`.inspect`: our envs as Inspect tasks (``inspect eval intercode_agents/intercode``), our tools
  and scorer in Inspect's form, the ``intercode`` sandbox provider, and Inspect logs read as records;
- :mod:`.harbor`: Harbor task folders (``intercode-agents export harbor``) and the verifier that runs
  inside them;
- :mod:`.atif`: ATIF trajectories written from and read into our records;
- :mod:`.openenv`: an OpenEnv server (``intercode-agents serve openenv``) on openenv-core's own server
  library, for TRL, Unsloth, SkyRL, torchforge and verifiers through OpenEnv's client;
- :mod:`.skyrl`: SkyRL-gym text environments, registered as ``intercode-<env>`` on import;
- :mod:`.trl`: environment classes for TRL's GRPO trainer (``environment_factory``).

The RL front ends drive :class:`~intercode_agents.runner.rollout.Rollout`, the step-level episode they
share.
"""

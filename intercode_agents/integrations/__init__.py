"""Our envs in the shapes other frameworks take: RL trainers' environments and servers.

- ``openenv/``: an OpenEnv server (``intercode-agents serve openenv``) on openenv-core's own server
  library, for TRL, Unsloth, SkyRL, torchforge and verifiers through OpenEnv's client;
- ``skyrl/``: SkyRL-gym text environments, registered as ``intercode-<env>`` on import;
- ``trl/``: environment classes for TRL's GRPO trainer (``environment_factory``).

Each one drives :class:`~intercode_agents.runner.rollout.Rollout`, the step-level episode the front
ends share, and imports its framework only when it is itself imported: ``import intercode_agents``
never needs one. docs/TRAINING.md says which framework takes which.
"""

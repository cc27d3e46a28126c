"""Harbor task folders: our tasks exported for Harbor (``intercode-agents export harbor``).

- :mod:`.environment`: the Dockerfile (and what it copies) that builds a task's sandbox from our
  images' sources;
- :mod:`.export`: one task folder per task (task.toml, instruction.md, environment/, tests/,
  solution/) of the Bash, SQL, Python and CTF envs, following Harbor's task format
  ``schema_version = "1.3"`` as read at harbor-framework/harbor@eb165d99ee2491cacd1f32d7a2eb7fe143a64587
  (Harbor 0.13.2);
- :mod:`.verify`: the verifier's side, copied into each task's tests/: the agent's side measured in
  the task's container and scored with our reward modules.

The folders are plain files: Harbor itself is not needed to write them.
"""

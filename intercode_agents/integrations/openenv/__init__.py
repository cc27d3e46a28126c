"""An OpenEnv server over our envs (the ``openenv`` extra: openenv-core).

``intercode-agents serve openenv --env bash`` serves an env; :mod:`.server` holds the OpenEnv
``Environment`` and the application. Importing this package imports openenv-core (and with it
gradio, several seconds): only the ``serve openenv`` command and its users do.
"""

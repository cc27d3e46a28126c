"""The Bash family: NL2Bash tasks on prepared file systems, in a persistent bash session.

``env.py`` (the :class:`BashEnv`), ``reward.py`` and ``changes.py`` (the reward maths over file-system
changes and the answer text), ``facts.py`` and ``fact_store.py`` (the gold's effect on an image,
cached), ``paper.py`` (each action run as the original InterCode ran it) and ``guard.py`` (which
commands may destroy task files). The CTF family builds on this env.
"""

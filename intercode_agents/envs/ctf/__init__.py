"""The CTF family: picoCTF puzzles in a tool-rich bash sandbox, scored by the submitted flag.

``env.py`` (the :class:`CtfEnv`, a Bash env with the task's assets copied in), ``tasks.py`` (which
assets a task has, and which tasks cannot run offline) and ``reward.py`` (the flag compared).
"""

"""The Python family: MBPP and HumanEval functions written in a persistent REPL.

``env.py`` (the :class:`PythonEnv`), ``scorer.py`` (the asserts scored out of the agent's reach, in a
fresh sandbox), ``asserts.py`` (an assert cut into probes and a check), ``values.py`` (the runner's
values decoded strictly), ``reward.py`` (pass fractions against the gold's), ``tasks.py`` (which
function a task asks for) and ``check_tests.py`` with ``check_unroll.py`` (HumanEval's ``check()``
cut into single asserts).
"""

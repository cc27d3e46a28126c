"""Fidelity with the InterCode paper: its recorded logs read (:mod:`.paper_log`) and re-scored in this
harness (:mod:`.rescore`, shown by :mod:`.rescore_view`), so that a difference with the paper's
tables has a measured cause. See docs/FIDELITY.md.
"""

"""Fidelity with the InterCode paper: its recorded logs read (:mod:`.paper_log`), re-scored in this
harness (:mod:`.rescore`, shown by :mod:`.rescore_view`), and their model replies replayed through our
strategies with the paper's prompts (:mod:`.strategy_replay`), so that a difference with the paper's
tables has a measured cause. See docs/FIDELITY.md.
"""

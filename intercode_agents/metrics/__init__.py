"""Metrics read off trajectory records alone: the run summary (:mod:`.summary`), pass@k over epochs
(:mod:`.epochs`), failure-mode tags (:mod:`.failure_modes`) and the safeguard comparison columns
(:mod:`.safeguards`). Nothing here plays an episode or touches an engine.
"""

"""ATIF, the Agent Trajectory Interchange Format (v1.7): our records written as ATIF trajectories
(``intercode-agents export atif``, ``eval --atif DIR``) and ATIF files read back as records (``view``,
``report``).

- :mod:`.schema`: the format's pydantic models, written from its published specification;
- :mod:`.export`: a record as an ATIF trajectory, one file per episode;
- :mod:`.importer`: an ATIF file (ours, Harbor's, anyone's) as a record.
"""

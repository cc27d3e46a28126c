"""Reports of runs: one static HTML page and a Markdown summary over run directories, and the
terminal views of runs, gold replays and replays.

``write_report(run_dirs, out)`` (:mod:`.writer`) writes both files; ``load_run`` (:mod:`.runs`) reads
one run directory as the report counts it. The report reads the records, never ``summary.json``.
"""

from intercode_agents.report.runs import Run, load_run
from intercode_agents.report.writer import write_report

__all__ = ["Run", "load_run", "write_report"]

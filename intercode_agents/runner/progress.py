"""The live progress bar of a run: done/total, success so far (over the scored episodes), episodes per
minute, ETA, and the excluded ones (env or model errors after retries, corrupt golds)."""

from __future__ import annotations

import time
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from intercode_agents.metrics.summary import is_scored
from intercode_agents.trajectory import Trajectory


def new_display(console: Console | None = None) -> Progress:
    """A progress display for one or more runs (each adds its bar)."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(bar_width=24),
        MofNCompleteColumn(),
        TextColumn("{task.fields[stats]}"),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )


class RunProgress:
    """Counts finished episodes (those recorded before a resume included) and renders them live."""

    def __init__(
        self,
        total: int,
        *,
        previous: list[Trajectory] | None = None,
        label: str = "episodes",
        console: Console | None = None,
        enabled: bool = True,
        shared: Progress | None = None,
    ) -> None:
        """``shared``: a display other runs use too (several models side by side); this run adds its
        bar to it and leaves starting and stopping it to its owner."""
        previous = previous or []
        self.total = total
        self.done = len(previous)
        self.scored = sum(is_scored(t) for t in previous)
        self.solved = sum(t.solved for t in previous if is_scored(t))
        self.excluded = len(previous) - self.scored
        self.new = 0
        self.started = time.perf_counter()
        self._owned = shared is None
        self._progress = (shared or new_display(console)) if enabled else None
        self._task = (
            self._progress.add_task(label, total=total, completed=self.done, stats=self.stats())
            if self._progress
            else None
        )

    def stats(self) -> str:
        rate = f"{100 * self.solved / self.scored:.0f}%" if self.scored else "–"
        color = "red" if self.excluded else "green"
        return (
            f"solved {self.solved} ({rate})  {self.per_minute():.1f} ep/min  "
            f"[{color}]excluded {self.excluded}[/]"
        )

    def per_minute(self) -> float:
        elapsed = time.perf_counter() - self.started
        return 60 * self.new / elapsed if elapsed > 0 else 0.0

    def advance(self, traj: Trajectory) -> None:
        self.done += 1
        self.new += 1
        if is_scored(traj):
            self.scored += 1
            self.solved += traj.solved
        else:
            self.excluded += 1
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, completed=self.done, stats=self.stats())

    def __enter__(self) -> RunProgress:
        if self._progress is not None and self._owned:
            self._progress.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._progress is not None and self._owned:
            self._progress.stop()

"""Several models in one command: the same run for each model, side by side, one directory per model.

``run_models(EvalConfig(env="bash", strategy="react", out_dir=Path("runs/cmp")), ["local", "m2"])``
plays each model's run concurrently (each with the given concurrency) into ``runs/cmp/<model>/``,
with one progress bar per model, and returns their results in the order given. Each run is an
ordinary run directory (its own lock, records, resume); ``--resume`` resumes each of them. The
comparison report over all of them is written by the caller (:func:`~.report.write_report`).
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import replace
from pathlib import Path

from rich.console import Console

from intercode_agents.errors import ConfigError, IntercodeError
from intercode_agents.runner.config import EvalConfig
from intercode_agents.runner.eval import EvalResult, RecordHook, run_eval
from intercode_agents.runner.progress import new_display


def model_dir_name(spec: str) -> str:
    """The folder of a model's run inside a comparison directory: its spec, made file-name safe."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", spec.strip()).strip("-.") or "model"


def model_dirs(models: list[str], out_dir: Path) -> dict[str, Path]:
    """Each model's run directory; ConfigError for a model given twice or two that share a folder."""
    dirs: dict[str, Path] = {}
    for spec in models:
        if spec in dirs:
            raise ConfigError(f"--model {spec} is given twice")
        if spec.strip() == "human":
            raise ConfigError("--model human cannot run side by side with other models: run it alone")
        path = out_dir / model_dir_name(spec)
        twin = next((other for other, p in dirs.items() if p == path), None)
        if twin is not None:
            raise ConfigError(f"--model {spec} and --model {twin} would share the folder {path}")
        dirs[spec] = path
    return dirs


async def run_models(
    config: EvalConfig,
    models: list[str],
    *,
    console: Console | None = None,
    on_record: RecordHook | None = None,
) -> list[EvalResult]:
    """Run ``config`` once per model, concurrently, each into ``config.out_dir / <model>``
    (``on_record`` as for :func:`~.eval.run_eval`)."""
    if config.out_dir is None:
        raise ConfigError("several models need the comparison's directory: pass --out DIR")
    dirs = model_dirs(models, config.out_dir)
    display = new_display(console) if config.progress else None
    if display is not None:
        display.start()
    try:
        async with asyncio.TaskGroup() as group:
            runs = [
                group.create_task(
                    run_eval(
                        replace(config, model=spec, out_dir=dirs[spec]),
                        console=console,
                        progress_display=display,
                        on_record=on_record,
                    )
                )
                for spec in models
            ]
    except BaseExceptionGroup as eg:
        project = [e for e in eg.exceptions if isinstance(e, IntercodeError)]
        raise (project[0] if project else eg.exceptions[0]) from None
    finally:
        if display is not None:
            display.stop()
    return [run.result() for run in runs]

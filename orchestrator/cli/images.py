"""`harness-probe images`: build images (content-hash tagged, reused when unchanged)."""

from __future__ import annotations

from typing import Annotated

import typer

from orchestrator.cli.common import ExtraCa, Rebuild, build_options, connect
from orchestrator.images import BuildError, ImageBuilder, image_names

app = typer.Typer(help="Container images under images/.", no_args_is_help=True)


@app.command("build")
def build(
    names: Annotated[list[str] | None, typer.Argument(help="Images to build (default: all).")] = None,
    extra_ca: ExtraCa = None,
    rebuild: Rebuild = False,
    show_log: Annotated[bool, typer.Option("--show-log", help="Print the build output.")] = False,
) -> None:
    """Build images in order (Debian root, base, then the rest); unchanged inputs reuse the existing tag."""
    engine = connect()
    builder = ImageBuilder(engine, build_options(extra_ca, rebuild), on_line=typer.echo if show_log else None)
    try:
        for name in names or image_names():
            img = builder.build(name)
            typer.echo(f"{img.name}\t{img.tag}\t{'built' if img.built else 'reused'}\t{img.seconds:.1f}s")
    except BuildError as exc:
        typer.echo(f"harness-probe: {exc}", err=True)
        raise typer.Exit(2) from None


@app.command("list")
def list_() -> None:
    """List the image folders."""
    for name in image_names():
        typer.echo(name)

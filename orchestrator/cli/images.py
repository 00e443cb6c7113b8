"""`harness-probe images`: build images (content-hash tagged, reused when unchanged)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from orchestrator import __version__
from orchestrator.cli.common import ExtraCa, Rebuild, Runtime, build_options, connect_engine
from orchestrator.errors import BadOption
from orchestrator.evidence import validate
from orchestrator.images import ImageBuilder, image_names, local_only
from orchestrator.output import check_output_folder
from orchestrator.runtime.archive import export_image

app = typer.Typer(help="Container images under images/.", no_args_is_help=True)


@app.command("build")
def build(
    names: Annotated[list[str] | None, typer.Argument(help="Images to build (default: all).")] = None,
    extra_ca: ExtraCa = None,
    rebuild: Rebuild = False,
    show_log: Annotated[bool, typer.Option("--show-log", help="Print the build output.")] = False,
    runtime: Runtime = None,
) -> None:
    """Build images in order (Debian root, base, then the rest); unchanged inputs reuse the existing tag.

    Example: harness-probe images build proxy reference
    """
    engine = connect_engine(runtime)
    builder = ImageBuilder(engine, build_options(extra_ca, rebuild), on_line=typer.echo if show_log else None)
    for name in names or image_names():  # a BuildError is the CLI root's to report, named, exit 2
        img = builder.build(name)
        typer.echo(f"{img.name}\t{img.tag}\t{'built' if img.built else 'reused'}\t{img.seconds:.1f}s")


@app.command("list")
def list_() -> None:
    """List the image folders.

    Example: harness-probe images list
    """
    for name in image_names():
        typer.echo(name)


@app.command("export")
def export(
    names: Annotated[
        list[str],
        typer.Argument(help="Images to export, e.g. proxy reference (each archive holds its parents' layers)."),
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="Directory for the archives and images.json.")],
    extra_ca: ExtraCa = None,
    runtime: Runtime = None,
) -> None:
    """Build (or reuse) images and write each as a docker-archive tar plus `images.json` (format image-archives/v1):
    what a cluster user copies to a machine with Apptainer and no engine (`--runtime apptainer` reads them).

    Example: harness-probe images export proxy reference -o hp-images/
    """
    check_output_folder(output)  # OutputExists or OutputUnwritable, before any image is built
    for name in names:
        why = local_only(name)
        if why is not None:
            raise BadOption(
                f"image {name!r} is built locally only and never exported (images/{name}/LOCAL-ONLY): {why}"
            )
    engine = connect_engine(runtime)
    builder = ImageBuilder(engine, build_options(extra_ca, False))
    manifest: dict[str, object] = {"schema": "image-archives/v1", "tool_version": __version__, "images": {}}
    images: dict[str, object] = {}
    for name in names:
        img = builder.build(name)
        archive = f"{img.name}-{img.inputs_sha256[:16]}.tar"
        info = export_image(engine.client, img.tag, output / archive)
        images[name] = {
            "tag": img.tag,
            "image_id": img.image_id,
            "inputs_sha256": img.inputs_sha256,
            "archive": archive,
            "bytes": info.bytes,
            "sha256": info.sha256,
        }
        typer.echo(f"{img.name}\t{img.tag}\t{output / archive}\t{info.bytes / 2**20:.0f} MiB")
    manifest["images"] = images
    validate(manifest, "image-archives/v1", "images.json")
    (output / "images.json").write_text(json.dumps(manifest, indent=2) + "\n")

"""Options and helpers shared by several commands."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated

import click
import typer

from orchestrator.evidence.text import clean
from orchestrator.images import BuildOptions, default_extra_ca
from orchestrator.runtime import Engine, PodRuntime
from orchestrator.runtime.select import RUNTIMES, open_engine
from orchestrator.runtime.settings import RuntimeSettings

__all__ = [
    "ExtraCa",
    "ImageArchives",
    "Rebuild",
    "Runtime",
    "build_options",
    "connect",
    "connect_engine",
    "runtime_settings",
    "say_why",
]

Runtime = Annotated[
    str | None,
    typer.Option(
        "--runtime",
        envvar="HARNESS_PROBE_RUNTIME",
        click_type=click.Choice(list(RUNTIMES)),  # named in help and offered by completion
        help=(
            f"Container runtime: {', '.join(RUNTIMES)}. A named runtime (this, or DOCKER_HOST for docker, "
            "CONTAINER_HOST for podman) that does not answer is an error; with none named, docker then podman, "
            "the first that answers (`harness-probe doctor` shows which). Env: HARNESS_PROBE_RUNTIME."
        ),
        rich_help_panel="Runtime",
    ),
]

ExtraCa = Annotated[
    Path | None,
    typer.Option(
        "--extra-ca",
        envvar="HARNESS_PROBE_EXTRA_CA",
        exists=True,
        dir_okay=False,
        help=(
            "PEM bundle to trust for package downloads during image builds (TLS-intercepting proxies). "
            "Never installed in the images' trust store. Env: HARNESS_PROBE_EXTRA_CA; default: PIP_CERT if set."
        ),
        rich_help_panel="Images",
    ),
]
Rebuild = Annotated[
    bool,
    typer.Option("--rebuild", help="Rebuild images even when their inputs are unchanged.", rich_help_panel="Images"),
]

ImageArchives = Annotated[
    Path | None,
    typer.Option(
        "--image-archives",
        envvar="HARNESS_PROBE_IMAGE_ARCHIVES",
        exists=True,
        file_okay=False,
        help=(
            "Directory written by `harness-probe images export` (images.json + archives): where a runtime without "
            "an image store (apptainer) takes its images from. Env: HARNESS_PROBE_IMAGE_ARCHIVES."
        ),
        rich_help_panel="Runtime",
    ),
]


def build_options(extra_ca: Path | None, rebuild: bool) -> BuildOptions:
    return BuildOptions(extra_ca=extra_ca or default_extra_ca(), rebuild=rebuild)


def runtime_settings(runtime: str | None = None, image_archives: Path | None = None) -> RuntimeSettings:
    """The CLI edge: the only place the runtimes' environment variables are read."""
    return RuntimeSettings.from_environ(os.environ, runtime, image_archives)


def connect(runtime: str | None = None, image_archives: Path | None = None) -> PodRuntime:
    """The runtime `run`, `images` and `cleanup` use (and `doctor` reports); an EngineUnavailable or UnknownRuntime
    is the CLI root's to report, named, exit 2."""
    return open_engine(runtime_settings(runtime, image_archives)).runtime


def connect_engine(runtime: str | None = None) -> Engine:
    """A runtime that builds and stores images itself (Docker, Podman): what `images` needs."""
    engine = connect(runtime)
    if not isinstance(engine, Engine):
        typer.echo(
            f"harness-probe: the {engine.name} runtime has no image store; build and export images where Docker "
            "or Podman runs (`harness-probe images export`), then run with --image-archives",
            err=True,
        )
        raise typer.Exit(2)
    return engine


def say_why(summary: Path, exit_code: int, shown: int = 10) -> None:
    """An exit 2 with a summary written: name on the terminal what made it an error (summary.json's `errors`)."""
    if exit_code != 2:
        return
    try:
        errors = [str(e) for e in json.loads(summary.read_text()).get("errors") or []]
    except (OSError, ValueError, AttributeError):
        errors = []
    if not errors:
        typer.echo(f"harness-probe: exit 2: see {summary}", err=True)
        return
    typer.echo(f"harness-probe: exit 2 ({len(errors)} error(s), all in {summary}):", err=True)
    for line in errors[:shown]:
        typer.echo(f"  {clean(line)}", err=True)  # an error can quote harness text: escapes, never raw
    if len(errors) > shown:
        typer.echo(f"  ... and {len(errors) - shown} more", err=True)

"""`harness-probe doctor`: is there an engine, which one, and can the images be built here?"""

from __future__ import annotations

import os
import platform
import shutil

import typer

from orchestrator.cli.common import connect
from orchestrator.images import default_extra_ca


def doctor() -> None:
    """Check the container engine answers and show what builds will use; exit 2 if no engine answers."""
    engine = connect()
    typer.echo(f"engine: {engine.server_version()} at {os.environ.get('DOCKER_HOST', 'default socket')}")
    typer.echo(f"python: {platform.python_version()}")
    ca = default_extra_ca()
    typer.echo(f"build CA: {ca if ca else 'none (set HARNESS_PROBE_EXTRA_CA behind a TLS-intercepting proxy)'}")
    typer.echo(f"debootstrap: {shutil.which('debootstrap') or 'not installed (needed only when no registry answers)'}")

"""`harness-probe cleanup`: remove what killed runs left behind, on every runtime this machine can reach."""

from __future__ import annotations

from typing import Annotated

import typer

from orchestrator.cli.common import Runtime, runtime_settings
from orchestrator.runtime.docker import CleanupIncomplete
from orchestrator.runtime.select import RUNTIMES, cleanup_everywhere


def cleanup(
    run_id: Annotated[
        str | None, typer.Option("--run-id", help="Only this run's objects (default: every run's).")
    ] = None,
    runtime: Runtime = None,
) -> None:
    """Remove containers, volumes and networks labelled harness-probe.run (Docker, Podman) and the pods' processes
    and work directories (Apptainer). Every runtime that answers, unless --runtime names one.

    A run removes what it created, also on Ctrl-C and timeouts, and the next run on the same runtime sweeps what a
    killed run left; this is for the explicit case.
    """
    found = cleanup_everywhere([runtime] if runtime else list(RUNTIMES), run_id, runtime_settings(runtime))
    for name, counts in found.items():
        if isinstance(counts, CleanupIncomplete):
            typer.echo(f"{name}: {counts}", err=True)
        elif isinstance(counts, str):
            typer.echo(f"{name}: skipped ({counts})")
        else:
            typer.echo(f"{name}: " + ", ".join(f"{n} {k}" for k, n in counts.items()) + " removed")
    if any(isinstance(counts, CleanupIncomplete) for counts in found.values()):
        raise typer.Exit(1)

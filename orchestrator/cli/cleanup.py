"""`harness-probe cleanup`: remove what killed runs left behind, on every runtime this machine can reach."""

from __future__ import annotations

from typing import Annotated

import typer

from orchestrator.cli.common import Runtime, runtime_settings
from orchestrator.runtime.docker import CleanupIncomplete
from orchestrator.runtime.select import RUNTIMES, cleanup_everywhere
from orchestrator.tempdirs import sweep_tempdirs


def _some_run(value: str | None) -> str | None:
    # The runtimes read an empty id as none given: every run's objects, other people's live runs with --force.
    if value is not None and not value.strip():
        raise typer.BadParameter(
            "an empty run id would match every run; give the id of one run, or leave --run-id out to mean every run"
        )
    return value


def cleanup(
    run_id: Annotated[
        str | None,
        typer.Option(
            "--run-id",
            callback=_some_run,
            help="Only this run's objects (default: every run's); an empty id is refused.",
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Also remove runs whose owner process is alive (or on another machine): this kills those runs.",
        ),
    ] = False,
    runtime: Runtime = None,
) -> None:
    """Remove containers, volumes and networks labelled harness-probe.run (Docker, Podman) and the pods' processes
    and work directories (Apptainer). Every runtime that answers, unless --runtime names one. Also the temporary
    folders (normalizer output, SQLite copies) that killed runs of this user left in the temporary directory.

    A run removes what it created, also on Ctrl-C and timeouts, and the next run on the same runtime sweeps what a
    killed run left; this is for the explicit case. Runs whose owner process (host, pid, start time: the owner
    label) may still be alive are spared and named, unless --force: on a shared engine --force kills other
    people's runs.

    Example: harness-probe cleanup --run-id 20261204T031500-1a2b3c
    """
    spared: dict[str, str] | None = None if force else {}
    found = cleanup_everywhere([runtime] if runtime else list(RUNTIMES), run_id, runtime_settings(runtime), spared)
    for name, counts in found.items():
        if isinstance(counts, CleanupIncomplete):
            typer.echo(f"{name}: {counts}", err=True)
        elif isinstance(counts, str):
            typer.echo(f"{name}: skipped ({counts})")
        else:
            typer.echo(f"{name}: " + ", ".join(f"{n} {k}" for k, n in counts.items()) + " removed")
    # Only surely dead processes' folders, whatever --force and --run-id say: a live run removes its own, and a
    # folder names no run.
    typer.echo(f"temporary folders of killed runs: {len(sweep_tempdirs())} removed")
    for run, owner in sorted((spared or {}).items()):
        typer.echo(f"spared run {run}: its owner process {owner} may be alive (--force removes it)")
    if any(isinstance(counts, CleanupIncomplete) for counts in found.values()):
        raise typer.Exit(1)

"""`harness-probe export`: write a run's canonical rollouts in another format (ATIF) into a new directory."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import click
import typer

from orchestrator.errors import EXIT_INTERRUPTED, BadFile
from orchestrator.evidence import FormatError
from orchestrator.output import check_output, refuse_output_in_sources
from orchestrator.suite import EXIT_ERROR

_VERSIONS = ("ATIF-v1.7", "ATIF-v1.8")


def export_command(
    run: Annotated[Path, typer.Argument(exists=True, file_okay=False, help="A run (or audit) directory.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="New directory for the exported files.")],
    fmt: Annotated[
        str, typer.Option("--format", "-f", click_type=click.Choice(["atif"]), help="Output format.")
    ] = "atif",
    atif_version: Annotated[
        str, typer.Option("--atif-version", click_type=click.Choice(list(_VERSIONS)), help="The ATIF version written.")
    ] = "ATIF-v1.8",
) -> None:
    """Write OUTPUT/<harness>/<scenario>/trajectory.json (ATIF) for every episode with a rollout.json.

    Each exported episode keeps its scenario, witness, runtime record, markers and the run's result (for how the
    harness process ended), so `harness-probe audit OUTPUT --rollout-format atif` checks the trajectories against
    the same evidence as the run.
    Facts ATIF has no field for (failed attempts, HTTP statuses, response ids, exit codes, gaps) are kept under
    `extra.harness_probe`. Exit code 0: written (an episode without a usable rollout is skipped and named); 2: an
    input error, or nothing to export; 130: interrupted (the partial output is removed).

    Example: harness-probe export --format atif out/ -o atif/
    """
    from orchestrator.atif import export_atif  # loaded on use: `run` needs none of it
    from orchestrator.audit import find_episodes, no_episodes

    if fmt != "atif":
        typer.echo(f"harness-probe: unknown export format {fmt!r} (known: atif)", err=True)
        raise typer.Exit(EXIT_ERROR)
    if atif_version not in _VERSIONS:
        typer.echo(f"harness-probe: --atif-version must be one of {', '.join(_VERSIONS)}", err=True)
        raise typer.Exit(EXIT_ERROR)
    # Named errors (OutputExists, OutputUnwritable, BadOption) are the CLI root's to report, before anything is read.
    refuse_output_in_sources(output, [run])
    check_output(output)
    try:
        episodes = find_episodes(run)
    except OSError as exc:  # a folder of the run that cannot be listed (no permission)
        raise BadFile(f"{exc.filename or run}: the folder cannot be listed: {exc.strerror or exc}") from None
    if not episodes:
        typer.echo(f"harness-probe: {run}: {no_episodes(run)}", err=True)
        raise typer.Exit(EXIT_ERROR)
    try:
        res = export_atif(episodes, output, atif_version)
    except FormatError as exc:
        typer.echo(f"harness-probe: {exc}", err=True)
        raise typer.Exit(EXIT_ERROR) from None
    except KeyboardInterrupt:
        # export_atif has removed what it wrote: said here, with the folder it was.
        typer.echo(f"harness-probe: export interrupted; the partial output {output} was removed", err=True)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    for why in res.skipped:
        typer.echo(f"skipped {why}", err=True)
    if not res.written:
        if output.is_dir() and not any(output.iterdir()):
            output.rmdir()  # made by this export, and nothing in it
        # Nothing to show for it is an input error (2), like a folder without episodes; 1 means "a check failed".
        typer.echo(
            f"harness-probe: nothing exported: none of the {len(episodes)} episode(s) in {run} has a rollout.json "
            "that makes an ATIF trajectory (each is named above)",
            err=True,
        )
        raise typer.Exit(EXIT_ERROR)
    typer.echo(f"exported {len(res.written)} trajectory file(s) as {atif_version}: {output.resolve()}")

"""`harness-probe cleanup`: remove every container, network and volume a run left behind (by label)."""

from __future__ import annotations

from typing import Annotated

import typer

from orchestrator.cli.common import connect


def cleanup(
    run_id: Annotated[
        str | None, typer.Option("--run-id", help="Only this run's objects (default: every run's).")
    ] = None,
) -> None:
    """Remove containers, networks and volumes labelled harness-probe.run.

    A run removes what it created, also on Ctrl-C and timeouts; this is for a killed process or a crashed engine.
    """
    counts = connect().cleanup(run_id)
    typer.echo(", ".join(f"{n} {k}" for k, n in counts.items()) + " removed")

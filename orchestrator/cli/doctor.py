"""`harness-probe doctor`: which runtimes this machine has, which answer, and what builds will use."""

from __future__ import annotations

import json
import platform
import shutil
from typing import Annotated

import typer

from orchestrator.cli.common import runtime_settings
from orchestrator.images import default_extra_ca
from orchestrator.runtime.discover import ORDER, RuntimeStatus, discover
from orchestrator.runtime.select import decide


def _line(s: RuntimeStatus) -> str:
    if s.answers:
        mode = "rootless" if s.rootless else "rootful"
        where = f" at {s.endpoint}" if s.endpoint else ""
        return f"{s.name}: answers, {s.version}, {mode}{where}"
    return f"{s.name}: {'not installed' if s.binary is None else 'does not answer'}"


def doctor(
    as_json: Annotated[bool, typer.Option("--json", help="Print the findings as one JSON object.")] = False,
) -> None:
    """List every container runtime found (Docker, Podman, Apptainer; Lima and Colima sockets included), which
    answers, rootless or not, and why one does not; then the build settings. Exit 2 if no runtime answers.

    Example: harness-probe doctor
    """
    settings = runtime_settings()  # the selection `run` makes, from the same settings: the two agree
    statuses = discover(ORDER, settings.as_environ())
    chosen, why = decide(settings, statuses)
    ca = default_extra_ca()
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "runtimes": [s.as_json() for s in statuses],
                    "default_runtime": chosen.name if chosen else None,
                    "default_runtime_why": why,
                    "python": platform.python_version(),
                    "build_ca": str(ca) if ca else None,
                    "debootstrap": shutil.which("debootstrap"),
                },
                indent=2,
            )
        )
    else:
        for s in statuses:
            typer.echo(_line(s))
            for reason in s.reasons:
                typer.echo(f"  - {reason}")
            for note in s.notes:
                typer.echo(f"  * {note}")
        typer.echo(f"default runtime: {chosen.name if chosen else 'none'} ({why})")
        typer.echo(f"python: {platform.python_version()}")
        typer.echo(f"build CA: {ca if ca else 'none (set HARNESS_PROBE_EXTRA_CA behind a TLS-intercepting proxy)'}")
        typer.echo(
            f"debootstrap: {shutil.which('debootstrap') or 'not installed (needed only when no registry answers)'}"
        )
    if chosen is None:
        typer.echo(f"harness-probe: no runtime to use: {why} (see the reasons above)", err=True)
        raise typer.Exit(2)

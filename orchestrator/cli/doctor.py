"""`harness-probe doctor`: which runtimes this machine has, which answer, and what builds will use."""

from __future__ import annotations

import json
import os
import platform
import shutil
from pathlib import Path
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


def _settings() -> tuple[list[str], list[str]]:
    """The environment's settings that `run` and `images build` would refuse, and those they take but that would
    surprise: a doctor that shows another CA than the one refused would send the user the wrong way."""
    refused, doubtful = [], []
    ca = os.environ.get("HARNESS_PROBE_EXTRA_CA")
    if ca:
        if not Path(ca).is_file():
            refused.append(f"HARNESS_PROBE_EXTRA_CA={ca!r} is not a file: run and images build refuse it")
        elif not _looks_like_pem(Path(ca)):
            doubtful.append(f"HARNESS_PROBE_EXTRA_CA={ca!r} holds no PEM certificate: builds would trust nothing more")
    archives = os.environ.get("HARNESS_PROBE_IMAGE_ARCHIVES")
    if archives and not Path(archives).is_dir():
        refused.append(f"HARNESS_PROBE_IMAGE_ARCHIVES={archives!r} is not a folder: run and images refuse it")
    return refused, doubtful


def _looks_like_pem(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return b"-----BEGIN CERTIFICATE-----" in f.read(1 << 20)
    except OSError:
        return False


def doctor(
    as_json: Annotated[bool, typer.Option("--json", help="Print the findings as one JSON object.")] = False,
) -> None:
    """List every container runtime found (Docker, Podman, Apptainer; Lima and Colima sockets included), which
    answers, rootless or not, and why one does not; then the build settings, and any setting `run` would refuse.
    Exit 2 if no runtime answers or a setting would be refused.

    Example: harness-probe doctor
    """
    settings = runtime_settings()  # the selection `run` makes, from the same settings: the two agree
    statuses = discover(ORDER, settings.as_environ())
    chosen, why = decide(settings, statuses)
    problems, doubts = _settings()
    named = os.environ.get("HARNESS_PROBE_EXTRA_CA")
    # A refused CA is not replaced by PIP_CERT's bundle in a build: the doctor must not name one either.
    ca = None if named and not Path(named).is_file() else default_extra_ca()
    no_ca = (
        "refused (below)"
        if named and ca is None
        else "none (set HARNESS_PROBE_EXTRA_CA behind a TLS-intercepting proxy)"
    )
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
                    "settings_refused": problems,
                    "settings_doubtful": doubts,
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
        typer.echo(f"build CA: {ca or no_ca}")
        typer.echo(
            f"debootstrap: {shutil.which('debootstrap') or 'not installed (needed only when no registry answers)'}"
        )
        archives = os.environ.get("HARNESS_PROBE_IMAGE_ARCHIVES")
        typer.echo(
            f"image archives: {archives or 'none (HARNESS_PROBE_IMAGE_ARCHIVES; Apptainer reads its images there)'}"
        )
    for doubt in doubts:
        typer.echo(f"harness-probe: warning: {doubt}", err=True)
    for problem in problems:
        typer.echo(f"harness-probe: setting refused: {problem}", err=True)
    if chosen is None:
        typer.echo(f"harness-probe: no runtime to use: {why} (see the reasons above)", err=True)
    if chosen is None or problems:
        raise typer.Exit(2)

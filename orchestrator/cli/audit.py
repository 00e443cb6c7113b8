"""`harness-probe audit`: re-check saved episodes offline and write the same reports into a new directory."""

from __future__ import annotations

import contextlib
import shutil
import tarfile
import tempfile
from pathlib import Path
from typing import Annotated

import click
import typer

from orchestrator.cli.common import say_why
from orchestrator.cli.run import parse_harness_args, print_verdicts
from orchestrator.errors import BadFile, BadOption
from orchestrator.harnesses import get_harness
from orchestrator.output import check_output, refuse_output_in_sources
from orchestrator.runtime.collect import CollectLimits


def audit_command(
    source: Annotated[
        Path, typer.Argument(exists=True, file_okay=False, help="A run directory (or <harness>/<scenario>/ tree).")
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="New directory for the audit's results.")],
    harness: Annotated[
        str | None,
        typer.Option("--harness", "-H", help="Re-normalize native/ with this harness instead of reading rollout.json."),
    ] = None,
    harness_arg: Annotated[
        list[str] | None, typer.Option("--harness-arg", "-a", help="KEY=VALUE option for the harness (repeatable).")
    ] = None,
    rollout_format: Annotated[
        str,
        typer.Option(
            "--rollout-format",
            click_type=click.Choice(["probe", "atif"]),
            help="probe: read each episode's rollout.json; atif: read its ATIF trajectory.json (an export, or the "
            "one the harness wrote in native/) and check it against the witness.",
        ),
    ] = "probe",
    collect_max_bytes: Annotated[
        int,
        typer.Option(
            "--collect-max-bytes",
            min=0,
            help="The byte cap the saved runs collected under (their --collect-max-bytes).",
        ),
    ] = CollectLimits.max_bytes,
    collect_max_files: Annotated[
        int,
        typer.Option(
            "--collect-max-files",
            min=0,
            help="The file cap the saved runs collected under (their --collect-max-files).",
        ),
    ] = CollectLimits.max_files,
) -> None:
    """Re-check saved episodes (witness + rollout, or witness + native logs with --harness), with no Docker.

    Writes scenario_result.json per episode, summary.json, report.md, report.html and junit.xml into OUTPUT.
    Exit code 0: every P0 gate passes; 1: a check failed; 2: an input error or an input changed while read; 130:
    the audited run was interrupted (its interrupted episodes stay so, never judged again).

    Example: harness-probe audit out/ -o audited/
    """
    if harness_arg and harness is None:
        # Options of no harness would be dropped without a word: the audit would not be the one asked for.
        raise BadOption("-a/--harness-arg sets an option of the harness given with -H/--harness; none was given")
    # Before a published run is unpacked or anything is written: the output must not land in the evidence it reads.
    refuse_output_in_sources(output, [source])
    check_output(output)
    with contextlib.ExitStack() as stack:
        source = _published(source, stack)
        _audit(source, output, harness, harness_arg, rollout_format, collect_max_bytes, collect_max_files)


def _published(source: Path, stack: contextlib.ExitStack) -> Path:
    """A published run (docs/results/runs/HARNESS/: summaries and evidence.tar.gz) unpacked into a temporary run
    directory; any other source as it is."""
    from orchestrator.report.published import ARCHIVE, EvidenceError, unpack_evidence

    if _episodes(source) or not (source / ARCHIVE).is_file() or (source / ARCHIVE).is_symlink():
        return source
    run = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="harness-probe-published-"))) / "run"
    try:
        unpack_evidence(source / ARCHIVE, run)
    except (EvidenceError, OSError, tarfile.TarError, EOFError) as exc:
        typer.echo(f"harness-probe: {source / ARCHIVE} cannot be read: {exc}", err=True)
        raise typer.Exit(2) from None
    if (source / "suite.json").is_file() and not (source / "suite.json").is_symlink():
        shutil.copyfile(source / "suite.json", run / "suite.json")
    return run


def _episodes(
    source: Path, skipped: list[str] | None = None, unreadable: list[str] | None = None
) -> list[tuple[str, str]]:
    """episode_names, with a folder of the source that cannot be listed named (BadFile), never a crash."""
    from orchestrator.audit import episode_names  # loaded on use: `run` needs none of it

    try:
        return episode_names(source, skipped, unreadable)
    except OSError as exc:
        raise BadFile(f"{exc.filename or source}: the folder cannot be listed: {exc.strerror or exc}") from None


def _audit(
    source: Path,
    output: Path,
    harness: str | None,
    harness_arg: list[str] | None,
    rollout_format: str,
    collect_max_bytes: int,
    collect_max_files: int,
) -> None:
    from orchestrator.audit import atif_export_hint, audit

    if rollout_format == "probe" and harness is None and (hint := atif_export_hint(source)):
        typer.echo(f"harness-probe: {hint}", err=True)
        raise typer.Exit(2)
    skipped: list[str] = []
    unreadable: list[str] = []
    found = _episodes(source, skipped, unreadable)
    if not found and unreadable:
        raise BadFile(f"{source}: no episodes found that can be read: {'; '.join(unreadable[:5])}")
    for why in skipped + unreadable:
        typer.echo(f"skipped {why}", err=True)
    # Input errors (unknown harness, bad option or file, output exists, input changed) are the CLI root's to report.
    h = get_harness(harness, parse_harness_args(harness_arg or [])) if harness else None
    limits = CollectLimits(max_bytes=collect_max_bytes, max_files=collect_max_files)
    res = audit(source, output, h, rollout_format, limits)
    print_verdicts(res)
    typer.echo(f"audited {len(res.results)} episode(s): {res.output.resolve()}")
    say_why(res.output / "summary.json", res.exit_code)
    raise typer.Exit(res.exit_code)

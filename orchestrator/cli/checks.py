"""`harness-probe checks`: the checks of the evidence profile, what each asks and which lie it catches."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from orchestrator.cli.results import REPO_ROOT
from orchestrator.output import write_output_file

app = typer.Typer(help="The checks of the evidence profile and the labels E1-E10 they carry.", no_args_is_help=True)

# Outside a checkout there is no docs/ of this project to regenerate: `checks docs` then needs --output.
EVIDENCE_DOC = REPO_ROOT / "docs" / "evidence.md" if REPO_ROOT else None


@app.command("list")
def list_checks() -> None:
    """Every check: id, tier, kind, labels and its question, in report row order.

    Example: harness-probe checks list
    """
    from orchestrator.report.evidence_doc import list_lines

    for line in list_lines():
        typer.echo(line)


@app.command("explain")
def explain_check(
    check_id: Annotated[str, typer.Argument(metavar="ID", help="A check id, e.g. attempts.multiset.")],
) -> None:
    """One check's question, tier, labels and the lie it catches.

    Example: harness-probe checks explain attempts.multiset
    """
    from orchestrator.checks.catalogue import explain, near
    from orchestrator.report.evidence_doc import explain_text

    try:
        x = explain(check_id)
    except KeyError:
        close = near(check_id)
        hint = f"; did you mean {', '.join(close)}?" if close else "; `harness-probe checks list` shows every check"
        typer.echo(f"harness-probe: unknown check {check_id!r}{hint}", err=True)
        raise typer.Exit(2) from None
    typer.echo(explain_text(x))


@app.command("docs")
def docs(
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Where to write it (default: docs/evidence.md).")
    ] = EVIDENCE_DOC,
) -> None:
    """Regenerate docs/evidence.md from the catalogue and the check registry.

    Example: harness-probe checks docs
    """
    from orchestrator.report.evidence_doc import render_evidence_doc

    if output is None:
        typer.echo("harness-probe: not run from a harness-probe checkout; say where with --output FILE", err=True)
        raise typer.Exit(2)
    # A folder, or a file on the way, is an OutputUnwritable the CLI root reports, named.
    write_output_file(output, render_evidence_doc(), "--output file", parents=True)
    typer.echo(f"wrote {output}")

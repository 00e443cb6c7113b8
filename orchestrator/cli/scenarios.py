"""`harness-probe scenarios`: list and validate the scenario catalogue."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from orchestrator.evidence import FormatError
from orchestrator.resources import scenario_schema_path
from orchestrator.scenarios import list_scenarios, load_scenario

app = typer.Typer(help="The scenario catalogue (scenarios/*.yaml) and its schema.", no_args_is_help=True)


@app.command("list")
def list_() -> None:
    """List every scenario with its description and declared scope.

    Example: harness-probe scenarios list
    """
    table = Table("scenario", "description", "scope")
    for s in list_scenarios():
        scope = ", ".join(k for k, v in s.scope.items() if v) or "-"
        table.add_row(s.name, s.description, scope)
    Console().print(table)


@app.command("validate")
def validate(paths: Annotated[list[Path], typer.Argument(help="Scenario files to validate.")]) -> None:
    """Validate scenario files against the scenario schema (`scenarios schema`); faults are named by JSONPath.

    Example: harness-probe scenarios validate my.yaml
    """
    bad = 0
    for path in paths:
        try:
            load_scenario(path)
            typer.echo(f"{path}: ok")
        except FormatError as exc:
            bad += 1
            typer.echo(str(exc), err=True)
    if bad:
        raise typer.Exit(2)


@app.command("schema")
def schema() -> None:
    """Print the scenario JSON Schema (probe-scenario/v1), e.g. to point an editor's YAML completion at it.

    Example: harness-probe scenarios schema > scenario.schema.json
    """
    typer.echo(scenario_schema_path().read_text().rstrip("\n"))

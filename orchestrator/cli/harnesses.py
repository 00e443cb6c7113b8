"""`harness-probe harnesses`: the registered harness adapters."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.table import Table

from orchestrator.harnesses import HARNESSES, get_harness

app = typer.Typer(help="Registered harness adapters.", no_args_is_help=True)


@app.command("list")
def list_() -> None:
    """List harnesses: image folder, protocols, options."""
    table = Table("harness", "image", "protocols", "options", "description")
    for name in sorted(HARNESSES):
        h = get_harness(name)
        opts = "\n".join(f"{k}: {v}" for k, v in h.options_help.items()) or "-"
        table.add_row(name, f"images/{h.image}", ", ".join(h.protocols), opts, h.description)
    Console().print(table)

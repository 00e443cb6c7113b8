"""`harness-probe harnesses`: the registered harness adapters, built-in and plugins."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.table import Table

from orchestrator.harnesses import PluginError, load_entry, refused_plugins, registry

app = typer.Typer(
    help="Registered harness adapters (built-in, and plugins in entry-point group harness_probe.harnesses).",
    no_args_is_help=True,
)


@app.command("list")
def list_() -> None:
    """List harnesses: where each comes from, image folder, protocols, options; broken plugins are reported."""
    table = Table("harness", "origin", "image", "protocols", "options", "description")
    problems = [f"{r.name} ({r.origin}): {r.reason}" for r in refused_plugins()]
    for name, entry in sorted(registry().items()):
        try:
            cls = load_entry(entry)
            h = cls()
        except (PluginError, ValueError, TypeError) as exc:
            problems.append(str(exc))
            continue
        opts = "\n".join(f"{k}: {v}" for k, v in h.options_help.items()) or "-"
        image = f"images/{h.image}" if h.image_dir is None else f"{h.image} ({h.image_dir})"
        table.add_row(name, entry.origin, image, ", ".join(h.protocols), opts, h.description)
    Console().print(table)
    for problem in problems:
        typer.echo(f"harness-probe: skipped broken harness plugin: {problem}", err=True)

"""`harness-probe harnesses`: the registered harness adapters, built-in and plugins, from what each declares."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from orchestrator.errors import UnknownHarness
from orchestrator.harnesses import Harness, PluginError, load_entry, refused_plugins, registry

app = typer.Typer(
    help="Registered harness adapters (built-in, and plugins in entry-point group harness_probe.harnesses).",
    no_args_is_help=True,
)


def _image(cls: type[Harness]) -> str:
    return f"images/{cls.image}" if cls.image_dir is None else f"{cls.image} ({cls.image_dir})"


def _option_line(cls: type[Harness]) -> str:
    return "\n".join(f"{o.name}: {o.allowed()} (default {o.default_text()})" for o in cls.options_declared) or "-"


@app.command("list")
def list_() -> None:
    """List harnesses: where each comes from, image folder, protocols, options; broken plugins are reported.

    Example: harness-probe harnesses list
    """
    table = Table("harness", "origin", "image", "protocols", "options", "description")
    problems = [f"{r.name} ({r.origin}): {r.reason}" for r in refused_plugins()]
    for name, entry in sorted(registry().items()):
        try:
            cls = load_entry(entry)
            cls()  # a plugin whose defaults do not parse is broken, and said so here
        except (PluginError, ValueError, TypeError) as exc:
            problems.append(str(exc))
            continue
        table.add_row(name, entry.origin, _image(cls), ", ".join(cls.protocols), _option_line(cls), cls.description)
    Console().print(table)
    for problem in problems:
        typer.echo(f"harness-probe: skipped broken harness plugin: {problem}", err=True)


@app.command("show")
def show(name: Annotated[str, typer.Argument(help="A harness name from `harnesses list`.")]) -> None:
    """Everything one harness declares: its options (type, default, allowed values, help), protocols, image,
    native paths and version command.

    Example: harness-probe harnesses show pi
    """
    entries = registry()
    if name not in entries:
        raise UnknownHarness(f"unknown harness {name!r} (known: {', '.join(sorted(entries))})")
    try:
        cls = load_entry(entries[name])
    except PluginError as exc:
        raise UnknownHarness(str(exc)) from None
    console = Console(highlight=False)
    console.print(f"[bold]{name}[/] ({entries[name].origin}): {cls.description}", markup=True)
    console.print(f"image: {_image(cls)}", markup=False)
    console.print(f"protocols: {', '.join(cls.protocols)}", markup=False)
    console.print(f"native paths: {', '.join(cls.native_paths) or '-'}", markup=False)
    console.print(f"version command: {' '.join(cls.version_command) or '-'}", markup=False)
    if not cls.options_declared:
        console.print("options: none", markup=False)
        return
    table = Table("option", "type", "default", "allowed", "help", title="options (-a KEY=VALUE)")
    for o in cls.options_declared:
        table.add_row(o.name, o.type_name(), o.default_text(), o.allowed(), o.help)
    console.print(table)

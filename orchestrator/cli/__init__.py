"""The `harness-probe` command line: one typer sub-app or command per module, joined here."""

from __future__ import annotations

import importlib
import io
import signal
import sys
import tempfile
import traceback
from typing import Annotated, NoReturn

import click
import typer
from typer.core import TyperGroup

from orchestrator.errors import EXIT_ERROR, EXIT_INTERRUPTED, HarnessProbeError, one_line
from orchestrator.logs import LogFormat, configure_logging
from orchestrator.resources import build_info
from orchestrator.runtime import install_interrupt_handlers

__all__ = ["app", "main"]

# Usage errors share exit code 2 with input and execution errors: 1 is reserved for a failed check.
EXIT_USAGE = EXIT_ERROR


def report_error(exc: HarnessProbeError) -> None:
    """`harness-probe: Name: first line` on stderr; further lines of the message (a schema's faults, a build log's
    tail, each runtime's reason) follow as they are."""
    lines = str(exc).strip().splitlines()
    typer.echo(f"harness-probe: {one_line(exc)}", err=True)
    for line in lines[1:]:
        typer.echo(line, err=True)


# Every command, in the order --help lists them (commands, then groups, as typer lists them): its module and the
# command function or sub-app in it. A module is imported when its command is asked for (by name, or by --help and
# completion, which ask for all), so `run` does not load what only `audit` or `results` use before its first
# container starts.
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("orchestrator.cli.run", "run"),
    "audit": ("orchestrator.cli.audit", "audit_command"),
    "export": ("orchestrator.cli.export", "export_command"),
    "merge": ("orchestrator.cli.merge", "merge_command"),
    "view": ("orchestrator.cli.view", "view_command"),
    "drift": ("orchestrator.cli.drift", "drift_command"),
    "cleanup": ("orchestrator.cli.cleanup", "cleanup"),
    "doctor": ("orchestrator.cli.doctor", "doctor"),
    "scenarios": ("orchestrator.cli.scenarios", "app"),
    "harnesses": ("orchestrator.cli.harnesses", "app"),
    "images": ("orchestrator.cli.images", "app"),
    "results": ("orchestrator.cli.results", "app"),
    "checks": ("orchestrator.cli.checks", "app"),
    "ci": ("orchestrator.cli.ci", "app"),
}


def load_command(name: str) -> click.Command:
    """The click command of COMMANDS[name], made by typer from the function or sub-app as `app.command` would."""
    module, attribute = COMMANDS[name]
    found = getattr(importlib.import_module(module), attribute)
    if isinstance(found, typer.Typer):
        command: click.Command = typer.main.get_group(found)
    else:
        alone = typer.Typer(add_completion=False)
        alone.command(name)(found)
        command = typer.main.get_command(alone)
    command.name = name
    return command


class _Commands(TyperGroup):
    """The root group: its commands loaded when asked for (COMMANDS); every command's HarnessProbeError ends here,
    as one named message and exit code 2."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*COMMANDS, *(n for n in super().list_commands(ctx) if n not in COMMANDS)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in COMMANDS and cmd_name not in self.commands:
            self.add_command(load_command(cmd_name), cmd_name)
        return super().get_command(ctx, cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and args[0] not in COMMANDS:
            # Not a command: typer suggests the nearest from the commands loaded, so load them all first.
            for name in COMMANDS:
                self.get_command(ctx, name)
        return super().resolve_command(ctx, args)

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except HarnessProbeError as exc:
            report_error(exc)
            raise typer.Exit(EXIT_ERROR) from None


app = typer.Typer(
    name="harness-probe",
    cls=_Commands,
    help=(
        "Probe AI agent harnesses in containers: a scripted provider (mitmproxy) plays the model, writes an "
        "independent witness of every exchange, and checks compare it with what the harness reports.\n\n"
        "Example: harness-probe run -H reference -o out/"
    ),
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"harness-probe {build_info()}")
        raise typer.Exit()


@app.callback()
def _root(
    log_format: Annotated[
        LogFormat,
        typer.Option(
            "--log-format",
            envvar="HARNESS_PROBE_LOG_FORMAT",
            help="human (default) or json lines on stderr. Env: HARNESS_PROBE_LOG_FORMAT.",
        ),
    ] = LogFormat.human,
    verbose: Annotated[
        int,
        typer.Option("--verbose", "-v", count=True, metavar="", show_default=False, help="More log output: -v, -vv."),
    ] = 0,
    quiet: Annotated[
        int, typer.Option("--quiet", "-q", count=True, metavar="", show_default=False, help="Less log output: -q, -qq.")
    ] = 0,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_version,
            is_eager=True,
            help="Print the version (and git commit in a checkout) and exit.",
        ),
    ] = False,
) -> None:
    configure_logging(log_format, verbose - quiet)


def main() -> None:
    install_interrupt_handlers()
    # A harness's text (a lone surrogate from a non-UTF-8 file name) must never kill the command after its verdicts
    # are written: what a terminal cannot show is printed as an escape. Reasons are cleaned where they are made;
    # this is the last guard for every printer.
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    try:
        # click's own main, not Typer's: Typer's turns an interrupt into a bare exit 130 before it reaches the handler
        # below, which then never says what was stopped; click's raises Abort from the interrupt.
        rc = click.Group.main(typer.main.get_command(app), standalone_mode=False)
    except (KeyboardInterrupt, click.exceptions.Abort) as exc:
        from orchestrator.stop import RunInterrupted

        # A run (drift's included) stopped once its episodes began says how far it got and where its results are.
        plain = "harness-probe: interrupted; what the run created was removed"
        stop = exc.__cause__ if isinstance(exc, click.exceptions.Abort) else exc
        print(stop.message() if isinstance(stop, RunInterrupted) else plain, file=sys.stderr)
        _exit(EXIT_INTERRUPTED)
    except click.ClickException as exc:
        exc.show()
        _exit(EXIT_USAGE)
    except Exception as exc:  # a crash is an execution error (2), never "a check failed" (1)
        saved = _save_traceback()
        print(f"harness-probe: internal error: {type(exc).__name__}: {str(exc)[:500]}{saved}", file=sys.stderr)
        _exit(EXIT_USAGE)
    _exit(rc if isinstance(rc, int) else 0)


def _exit(code: int) -> NoReturn:
    # The command is done and has removed what it made: an interrupt from here on has nothing left to stop, and
    # during the interpreter's shutdown (after its handlers are gone) it would turn the run's exit code into a
    # death by signal. Ignored handlers are the ones Python leaves in place at shutdown.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.exit(code)


def _save_traceback() -> str:
    # The traceback goes to a file, named in the one-line message, so stderr stays readable.
    try:
        with tempfile.NamedTemporaryFile("w", prefix="harness-probe-crash-", suffix=".txt", delete=False) as f:
            f.write(traceback.format_exc())
        return f" (traceback: {f.name})"
    except OSError:
        return ""

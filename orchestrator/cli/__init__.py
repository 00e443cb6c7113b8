"""The `harness-probe` command line: one typer sub-app or command per module, joined here."""

from __future__ import annotations

import io
import signal
import sys
import tempfile
import traceback
from typing import Annotated, NoReturn

import click
import typer
from typer.core import TyperGroup

from orchestrator.cli import (
    audit,
    ci,
    cleanup,
    doctor,
    drift,
    export,
    harnesses,
    images,
    merge,
    results,
    run,
    scenarios,
)
from orchestrator.cli import checks as checks_cli
from orchestrator.cli import view as view_cli
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


class _Commands(TyperGroup):
    """The root group: every command's HarnessProbeError ends here, as one named message and exit code 2."""

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
app.command("run")(run.run)
app.command("audit")(audit.audit_command)
app.command("export")(export.export_command)
app.command("merge")(merge.merge_command)
app.command("view")(view_cli.view_command)
app.command("drift")(drift.drift_command)
app.add_typer(scenarios.app, name="scenarios")
app.add_typer(harnesses.app, name="harnesses")
app.add_typer(images.app, name="images")
app.add_typer(results.app, name="results")
app.add_typer(checks_cli.app, name="checks")
app.add_typer(ci.app, name="ci")
app.command("cleanup")(cleanup.cleanup)
app.command("doctor")(doctor.doctor)


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
        rc = app(standalone_mode=False)
    except (KeyboardInterrupt, click.exceptions.Abort) as exc:
        from orchestrator.stop import RunInterrupted

        # A run (drift's included) stopped once its episodes began says how far it got and where its results are.
        plain = "harness-probe: interrupted; what the run created was removed"
        print(exc.message() if isinstance(exc, RunInterrupted) else plain, file=sys.stderr)
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

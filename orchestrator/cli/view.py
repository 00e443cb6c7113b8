"""`harness-probe view`: open a run's report, or one episode's page, in the browser; or serve the run on localhost."""

from __future__ import annotations

import functools
import http.server
import webbrowser
from pathlib import Path
from typing import Annotated

import typer

from orchestrator.paths import is_plain_name

EXIT_ERROR = 2


def _fail(message: str) -> typer.Exit:
    typer.echo(f"harness-probe: {message}", err=True)
    return typer.Exit(EXIT_ERROR)


def _target(run: Path, episode: str | None) -> Path:
    if not run.is_dir():
        raise _fail(f"no run directory {run}")
    if episode is None:
        page = run / "report.html"
        if not page.is_file():
            raise _fail(f"{run} has no report.html (not a finished run, or not a run directory)")
        return page
    harness, _, scenario = episode.partition("/")
    if not (is_plain_name(harness) and is_plain_name(scenario)):
        raise _fail(f"{episode!r} is not HARNESS/SCENARIO")
    folder = run / harness / scenario
    if not folder.is_dir():
        known = sorted(f"{p.parent.parent.name}/{p.parent.name}" for p in run.glob("*/*/scenario.json"))
        shown = ", ".join(known[:10]) + (" ..." if len(known) > 10 else "") if known else "none"
        raise _fail(f"the run in {run} has no episode {episode} (episodes: {shown})")
    page = folder / "episode.html"
    if not page.is_file():
        raise _fail(f"{folder} has no episode.html (made by a harness-probe without episode pages? audit it again)")
    return page


def view_command(
    run: Annotated[Path, typer.Argument(help="A run directory (written by run, audit or merge).")],
    episode: Annotated[
        str | None, typer.Argument(metavar="[HARNESS/SCENARIO]", help="An episode of the run; default: the report.")
    ] = None,
    serve: Annotated[
        bool, typer.Option("--serve", help="Serve the run directory over HTTP (for a remote machine) until Ctrl-C.")
    ] = False,
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port for --serve (0: any free one).")] = 8000,
    bind: Annotated[
        str,
        typer.Option(
            "--bind", help="Address for --serve. Default loopback only; 0.0.0.0 exposes the run to the network."
        ),
    ] = "127.0.0.1",
    no_browser: Annotated[bool, typer.Option("--no-browser", help="Print the page's path; open nothing.")] = False,
) -> None:
    """Open the run's report.html, or HARNESS/SCENARIO's episode.html, in the browser.

    Without a browser (or with --no-browser) the page's path is printed. With --serve the run directory is served on
    127.0.0.1:PORT (forward the port over ssh from a remote machine) and its address printed.

    Example: harness-probe view out/ reference/retry_500
    """
    page = _target(run, episode)
    if serve:
        _serve(run, page, bind, port)
        return
    url = page.resolve().as_uri()
    opened = False
    if not no_browser:
        try:
            opened = webbrowser.open(url)
        except webbrowser.Error:
            opened = False
    typer.echo(f"opened {url}" if opened else str(page.resolve()))


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def _serve(run: Path, page: Path, bind: str, port: int) -> None:
    handler = functools.partial(_Quiet, directory=str(run.resolve()))
    try:
        server = http.server.ThreadingHTTPServer((bind, port), handler)
    except OSError as exc:
        raise _fail(f"cannot serve on {bind}:{port}: {exc.strerror or exc}") from None
    host, real_port = str(server.server_address[0]), server.server_address[1]
    rel = page.resolve().relative_to(run.resolve()).as_posix()
    typer.echo(f"serving {run.resolve()} at http://{host}:{real_port}/{rel} (Ctrl-C to stop)")
    if bind not in ("127.0.0.1", "::1", "localhost"):
        typer.echo(f"harness-probe: warning: {bind} serves the run to other machines", err=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        typer.echo("stopped")
    finally:
        server.server_close()

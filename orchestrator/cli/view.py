"""`harness-probe view`: open a run's report, or one episode's page, in the browser; or serve the run on localhost."""

from __future__ import annotations

import functools
import http.server
import ipaddress
import os
import socket
import stat
import webbrowser
from pathlib import Path
from typing import Annotated, Any

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
    # One trailing slash is what a shell's completion of the folder leaves.
    harness, _, scenario = (episode[:-1] if episode.endswith("/") else episode).partition("/")
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


class _RunHandler(http.server.SimpleHTTPRequestHandler):
    """Serves a run directory where every file but the run's own pages is inert.

    A run holds what the hostile harness wrote (native/). Served as the stdlib guesses, its `log.html` or `x.svg`
    would run script on the run's origin and could read every other file of it; so only `report.html` and
    `<harness>/<scenario>/episode.html` are HTML, every other file is text, nothing is sniffed, and anything but our
    pages (files, listings, errors) is sandboxed: a unique origin where no script runs.
    """

    index_pages = ()  # a native index.html would stand in for its folder's listing: always list
    _page = False

    def parse_request(self) -> bool:
        self._page = False  # per request: a kept-alive connection must not inherit the last one's verdict
        return super().parse_request()

    def send_head(self) -> Any:
        path = self.translate_path(self.path)
        root = os.path.realpath(self.directory)
        real = os.path.realpath(path)
        # Nothing outside the run through a link, and no FIFO or device to block a thread on open().
        try:
            mode = os.stat(real).st_mode
        except OSError:
            mode = 0
        if os.path.commonpath([root, real]) != root or not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            self.send_error(http.HTTPStatus.NOT_FOUND, "File not found")
            return None
        parts = Path(os.path.relpath(path, self.directory)).parts
        self._page = (
            stat.S_ISREG(mode)
            and not os.path.islink(path)
            and (parts == ("report.html",) or (len(parts) == 3 and parts[2] == "episode.html"))
        )
        return super().send_head()

    def guess_type(self, path: str | os.PathLike[str]) -> str:
        if self._page:
            return "text/html; charset=utf-8"
        if os.fspath(path).lower().endswith(".json"):
            return "application/json"
        return "text/plain; charset=utf-8"

    def end_headers(self) -> None:
        self.send_header("X-Content-Type-Options", "nosniff")
        if not self._page:
            self.send_header("Content-Security-Policy", "sandbox")
        super().end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


def _server(run: Path, bind: str, port: int) -> http.server.ThreadingHTTPServer:
    """A server for `run` on `bind`:`port`, IPv4 or IPv6 as the address is (ThreadingHTTPServer alone is IPv4)."""
    if not bind:
        raise _fail("--bind is empty: name an address (127.0.0.1, ::1, or 0.0.0.0 for every interface)")
    try:
        family = socket.getaddrinfo(bind, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][0]
    except (OSError, UnicodeError) as exc:
        raise _fail(f"cannot serve on {bind}:{port}: {getattr(exc, 'strerror', None) or exc}") from None

    class Server(http.server.ThreadingHTTPServer):
        address_family = family

    handler = functools.partial(_RunHandler, directory=str(run.resolve()))
    try:
        return Server((bind, port), handler)
    except OSError as exc:
        raise _fail(f"cannot serve on {bind}:{port}: {exc.strerror or exc}") from None


def _serve(run: Path, page: Path, bind: str, port: int) -> None:
    server = _server(run, bind, port)
    host, real_port = str(server.server_address[0]), server.server_address[1]
    shown = f"[{host.replace('%', '%25')}]" if ":" in host else host
    rel = page.resolve().relative_to(run.resolve()).as_posix()
    typer.echo(f"serving {run.resolve()} at http://{shown}:{real_port}/{rel} (Ctrl-C to stop)")
    if not ipaddress.ip_address(host.partition("%")[0]).is_loopback:
        typer.echo(f"harness-probe: warning: {host} serves the run to other machines", err=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        typer.echo("stopped")
    finally:
        server.server_close()

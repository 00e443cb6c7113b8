"""`view --serve`: only the run's own pages are HTML; every other file is inert text, sandboxed, never sniffed."""

from __future__ import annotations

import http.client
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from orchestrator.cli import app
from orchestrator.cli.view import _server

SCRIPT = b"<script>fetch('/report.html').then(r => r.text()).then(t => document.title = t)</script>"
PAGE = "text/html; charset=utf-8"
TEXT = "text/plain; charset=utf-8"


@pytest.fixture
def run(tmp_path: Path) -> Path:
    run = tmp_path / "R"
    native = run / "h" / "s" / "native"
    (native / "sub").mkdir(parents=True)
    (run / "report.html").write_text("<html>report</html>")
    (run / "h" / "s" / "episode.html").write_text("<html>episode</html>")
    (run / "h" / "s" / "witness.jsonl").write_text("{}\n")
    for name in ("log.html", "x.svg", "episode.html", "index.html", "report.html", "sub/episode.html", "a.json"):
        (native / name).write_bytes(SCRIPT)
    (tmp_path / "outside.txt").write_text("not the run's")
    (native / "out.txt").symlink_to(tmp_path / "outside.txt")
    os.mkfifo(native / "fifo.log")
    return run


def _get(address: tuple[str, int], path: str) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection(address[0], address[1], timeout=10)
    try:
        conn.request("GET", path)
        reply = conn.getresponse()
        return reply.status, {k.lower(): v for k, v in reply.getheaders()}, reply.read()
    finally:
        conn.close()


@pytest.fixture
def served(run: Path) -> Iterator[tuple[str, int]]:
    server = _server(run, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield "127.0.0.1", int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def test_the_runs_own_pages_are_html_and_not_sandboxed(served: tuple[str, int]) -> None:
    for path in ("/report.html", "/h/s/episode.html"):
        status, headers, _ = _get(served, path)
        assert status == 200 and headers["content-type"] == PAGE, path
        assert headers["x-content-type-options"] == "nosniff" and "content-security-policy" not in headers, path


@pytest.mark.parametrize(
    "path",
    [
        "/h/s/native/log.html",
        "/h/s/native/x.svg",
        "/h/s/native/episode.html",  # named like a page, one folder too deep
        "/h/s/native/sub/episode.html",
        "/h/s/native/report.html",
        "/h/s/witness.jsonl",
    ],
)
def test_every_other_file_is_sandboxed_text(served: tuple[str, int], path: str) -> None:
    status, headers, body = _get(served, path)
    assert status == 200 and (body == SCRIPT or path.endswith(".jsonl"))
    assert headers["content-type"] == TEXT
    assert headers["x-content-type-options"] == "nosniff" and headers["content-security-policy"] == "sandbox"


def test_json_stays_json_and_sandboxed(served: tuple[str, int]) -> None:
    status, headers, _ = _get(served, "/h/s/native/a.json")
    assert status == 200 and headers["content-type"] == "application/json"
    assert headers["x-content-type-options"] == "nosniff" and headers["content-security-policy"] == "sandbox"


def test_a_listing_is_sandboxed_and_a_native_index_html_does_not_replace_it(served: tuple[str, int]) -> None:
    for path in ("/", "/h/s/native/"):
        status, headers, body = _get(served, path)
        assert status == 200 and b"Directory listing" in body, path
        assert headers["content-security-policy"] == "sandbox" and headers["x-content-type-options"] == "nosniff"
    status, headers, _ = _get(served, "/h/s/native")  # the redirect to the listing
    assert status == 301 and headers["content-security-policy"] == "sandbox"


def test_a_link_out_of_the_run_a_fifo_and_a_missing_file_are_not_found(served: tuple[str, int]) -> None:
    for path in ("/h/s/native/out.txt", "/h/s/native/fifo.log", "/nope", "/../outside.txt"):
        status, headers, body = _get(served, path)
        assert status == 404 and headers["content-security-policy"] == "sandbox", path
        assert b"not the run's" not in body


def test_serves_on_ipv6_loopback(run: Path) -> None:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback here")
    server = _server(run, "::1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        status, headers, body = _get(("::1", int(server.server_address[1])), "/h/s/episode.html")
        assert status == 200 and body == b"<html>episode</html>" and headers["content-type"] == PAGE
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def test_an_empty_bind_is_a_named_error(run: Path) -> None:
    res = CliRunner().invoke(app, ["view", str(run), "--serve", "--bind", "", "--port", "0"])
    assert res.exit_code == 2 and "--bind is empty" in res.output


def test_an_episode_with_a_trailing_slash_is_accepted_once(run: Path) -> None:
    res = CliRunner().invoke(app, ["view", str(run), "h/s/", "--no-browser"])
    assert res.exit_code == 0 and res.output.strip() == str((run / "h" / "s" / "episode.html").resolve())
    for bad in ("h/s//", "h//", "/"):
        res = CliRunner().invoke(app, ["view", str(run), bad, "--no-browser"])
        assert res.exit_code == 2 and "is not HARNESS/SCENARIO" in res.output, bad

"""In Chromium, no native file the episode page links runs script, over file:// or under `view --serve`."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator.cli.view import _server
from orchestrator.paths import EpisodePaths
from orchestrator.report.episode_page import write_episode_page
from tests.browser import browser_page

EPISODES = Path(__file__).resolve().parents[2] / "fixtures" / "episodes"
# Well-formed XHTML too, so an XML type (.xml, .xhtml) would run it as surely as HTML would.
PAYLOAD = "<html xmlns=\"http://www.w3.org/1999/xhtml\"><head><script>document.title='ran'</script></head></html>\n"
SVG = "<svg xmlns=\"http://www.w3.org/2000/svg\"><script>document.title='ran'</script></svg>\n"
SUFFIXES = ["html", "htm", "shtml", "xhtml", "xht", "xml", "svg", "mhtml", "HTML", "Svg", "json", "JSON", "jsonl"]
SUFFIXES += ["ndjson", "txt", "log", "md", "yaml", "yml", "toml", "csv", "db", "sqlite", "sqlite3", "pdf", "js"]
RENDERED = {"html", "htm", "shtml", "xhtml", "xht", "xml", "svg", "mhtml"}
# Types Chromium renders as a document that runs script.
DOCUMENTS = {"text/html", "application/xhtml+xml", "image/svg+xml", "text/xml", "application/xml"}


def _open(page: Any, url: str) -> str:
    """The type Chromium shows `url` as, or "download" for a file it saves instead."""
    try:
        page.goto(url)
    except Exception as exc:  # Playwright's Error: a download ends the navigation
        if "Download is starting" not in str(exc):
            raise
        return "download"
    return str(page.evaluate("document.contentType"))


@pytest.fixture
def episode(tmp_path: Path) -> Path:
    """A run holding one episode whose native/ has a script in a file of every suffix, and one with none."""
    root = tmp_path / "run" / "reference" / "tool_success"
    shutil.copytree(EPISODES / "tool_success", root)
    (tmp_path / "run" / "report.html").write_text("<!DOCTYPE html><title>report</title>")
    native = root / "native"
    native.mkdir()
    for suffix in SUFFIXES:
        (native / f"log.{suffix}").write_text(SVG if suffix.lower() == "svg" else PAYLOAD)
    (native / "noext").write_text(PAYLOAD)
    result = {"harness": "reference", "scenario": "tool_success", "verdict": "pass", "checks": []}
    page = write_episode_page(EpisodePaths(root), result)
    assert page is not None
    return page


def _native_hrefs(page: Any) -> list[str]:
    page.evaluate("document.querySelectorAll('details').forEach(function (d) { d.open = true; })")
    hrefs: list[str] = page.eval_on_selector_all("a[href^='native/']", "as => as.map(a => a.getAttribute('href'))")
    return hrefs


def test_no_native_file_linked_from_the_page_runs_over_file_urls(episode: Path) -> None:
    with browser_page() as (page, errors):
        page.goto(episode.as_uri())
        hrefs = _native_hrefs(page)
        assert sorted(hrefs) == sorted(
            [f"native/log.{s}" for s in SUFFIXES if s.lower() not in RENDERED | {"pdf", "js"}] + ["native/noext"]
        )
        for href in hrefs:
            page.goto(episode.as_uri())
            _native_hrefs(page)
            page.click(f"a[href='{href}']")  # shown as text, or downloaded (the page stays)
            page.wait_for_timeout(150)
            assert page.title() != "ran", href
            shown = _open(page, (episode.parent / href).as_uri())  # and opened by its address
            assert shown not in DOCUMENTS and page.title() != "ran", (href, shown)
        # The payload is live: opened by hand, the files the page does not link do run it.
        for name in ("log.html", "log.svg", "log.xhtml"):
            page.goto((episode.parent / "native" / name).as_uri())
            assert page.title() == "ran", name
        assert not [e for e in errors if e.startswith("network request")]


@pytest.fixture
def served(episode: Path) -> Iterator[str]:
    server = _server(episode.parents[2], "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def test_under_view_serve_no_native_file_runs_and_the_page_does(served: str) -> None:
    base = f"{served}/reference/tool_success"
    with browser_page() as (page, errors):
        for name in ["noext", *(f"log.{s}" for s in SUFFIXES)]:
            page.goto(f"{base}/native/{name}")
            assert page.title() != "ran", name
            assert page.evaluate("document.contentType") in ("text/plain", "application/json"), name
        page.goto(f"{base}/native/")  # the listing: sandboxed, its links plain
        assert "log.html" in page.content()
        page.goto(f"{base}/episode.html")
        page.click("button[data-open='1']")  # our own page is HTML and its script runs
        assert page.title() == "reference/tool_success: episode"
        assert errors == []

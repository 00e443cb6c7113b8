"""Playwright driving Debian's chromium by its path (Playwright's own browser download is never used)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def chromium_path() -> str:
    found = next((p for p in map(shutil.which, BROWSERS) if p), None)
    if found:
        return found
    # CI installs Debian's chromium, so there a missing browser is a broken set-up, not a reason to skip.
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but no browser found (tried {', '.join(BROWSERS)}); install Debian's chromium")
    pytest.skip("no chromium binary (set CI=true to make this a failure)")


@contextmanager
def browser_page() -> Iterator[tuple[Any, list[str]]]:
    """A fresh page, and the console errors and page errors it collects (a test asserts there are none)."""
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            # Nothing may be fetched from the network: every request but file:// and http://127.0.0.1 is refused.
            page.route(
                "**/*",
                lambda route: route.continue_()
                if route.request.url.startswith(("file://", "http://127.0.0.1"))
                else (errors.append(f"network request: {route.request.url}"), route.abort())[1],
            )
            yield page, errors
        finally:
            browser.close()

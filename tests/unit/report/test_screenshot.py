"""report.html really renders: headless Chromium screenshots it, showing the pass and fail colours."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from orchestrator.report import report_run
from tests.unit.report.conftest import Run

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
PASS_BG, FAIL_BG = (0xD9, 0xF2, 0xDF), (0xFB, 0xDC, 0xDC)  # --pass and --fail in report/html.py


def _browser() -> str:
    found = next((p for p in map(shutil.which, BROWSERS) if p), None)
    if found:
        return found
    # CI installs Debian's chromium, so there a missing browser is a broken set-up, not a reason to skip.
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but no browser found (tried {', '.join(BROWSERS)}); install Debian's chromium")
    pytest.skip("no chromium binary (set CI=true to make this a failure)")


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def read_png(data: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and unfiltered rows of an 8-bit RGB/RGBA, non-interlaced PNG (what Chromium writes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert (depth, colour, interlace) in ((8, 2, 0), (8, 6, 0)), (depth, colour, interlace)
    bpp = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(idat), width * bpp
    rows: list[bytes] = []
    prev = bytearray(stride)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b, c = prev[x], prev[x - bpp] if x >= bpp else 0
            line[x] = (line[x] + (0, a, b, (a + b) // 2, _paeth(a, b, c))[f]) & 0xFF
        # Keep RGB only: the alpha channel says nothing about what is shown.
        rows.append(bytes(v for i, v in enumerate(line) if i % bpp < 3))
        prev = line
    return width, height, rows


def _has(rows: list[bytes], rgb: tuple[int, int, int], tol: int = 6) -> bool:
    for row in rows[::2]:
        for x in range(0, len(row), 3):
            if all(abs(row[x + i] - rgb[i]) <= tol for i in range(3)):
                return True
    return False


def test_report_html_renders_in_headless_chromium(run: Run, tmp_path: Path) -> None:
    browser = _browser()
    report_run(
        run.dir,
        run.suite,
        run.results,
        full_suite=True,
        started_at="2025-01-01T12:00:00.000Z",
        finished_at="2025-01-01T12:30:00.000Z",
    )
    png = tmp_path / "report.png"
    cmd = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'profile'}",
        f"--screenshot={png}",
        "--window-size=1200,900",
        (run.dir / "report.html").resolve().as_uri(),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert png.is_file(), f"no screenshot (exit {proc.returncode}):\n{proc.stderr[-2000:]}"
    data = png.read_bytes()
    assert len(data) > 10_000
    width, height, rows = read_png(data)
    assert (width, height) == (1200, 900)
    colours = {row[x : x + 3] for row in rows[::4] for x in range(0, len(row), 12)}
    assert len(colours) > 20, "the screenshot is (nearly) a single colour"
    assert _has(rows, PASS_BG) and _has(rows, FAIL_BG), "pass and fail cells are not coloured"

"""Marker files read for the checks: regular files only, never through a link, each up to its cap."""

from __future__ import annotations

import os
from pathlib import Path

from orchestrator.evidence.markers import MARKER_BYTES, MAX_MARKERS, read_folder


def test_only_regular_files_are_read_and_nothing_through_a_link(tmp_path: Path) -> None:
    folder = tmp_path / "markers"
    folder.mkdir()
    (folder / "call_1.txt").write_text("probe_1")
    (tmp_path / "secret").write_text("outside")
    (folder / "link.txt").symlink_to(tmp_path / "secret")
    os.mkfifo(folder / "fifo.txt")  # opened without blocking, then refused
    (folder / "dir.txt").mkdir()
    (folder / "big.txt").write_bytes(b"x" * (MARKER_BYTES + 1))
    (folder / "cap.txt").write_bytes(b"y" * MARKER_BYTES)
    found = read_folder(folder)
    assert found == {"call_1.txt": "probe_1", "cap.txt": "y" * MARKER_BYTES}
    (tmp_path / "linked").symlink_to(folder)
    assert read_folder(tmp_path / "linked") == {}  # the folder itself reached by a link
    assert read_folder(tmp_path / "missing") == {}


def test_at_most_max_markers_are_read_in_name_order(tmp_path: Path) -> None:
    for i in range(MAX_MARKERS + 3):
        (tmp_path / f"m{i:06d}").write_text(str(i))
    found = read_folder(tmp_path)
    assert len(found) == MAX_MARKERS
    assert max(found) == f"m{MAX_MARKERS - 1:06d}"

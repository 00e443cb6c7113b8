"""`make bench`'s table: rows recorded by the benches land between the markers of docs/performance.md only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.bench import table

ROOT = Path(__file__).resolve().parents[3]


def test_rows_replace_only_what_is_between_the_markers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = tmp_path / "rows.jsonl"
    monkeypatch.setenv(table.ROWS_ENV, str(rows))
    table.record("audit of one rollout", "8.1 s wall", "< 10 s", "met")
    table.record("a | pipe", "x", "-", "-")
    doc = tmp_path / "performance.md"
    doc.write_text(f"# P\n\nhand-written above\n\n{table.BEGIN}\nold row\n{table.END}\n\n## CI budget\nbelow\n")
    table.write(rows, doc)
    text = doc.read_text()
    assert "old row" not in text
    assert text.startswith("# P\n\nhand-written above\n\n" + table.BEGIN)
    assert text.endswith(table.END + "\n\n## CI budget\nbelow\n")
    assert "| audit of one rollout | 8.1 s wall | < 10 s | met |" in text
    assert "| a \\| pipe | x | - | - |" in text
    # Written twice, the page keeps one table.
    table.write(rows, doc)
    assert doc.read_text().count(table.BEGIN) == 1


def test_nothing_is_recorded_outside_make_bench(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(table.ROWS_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    table.record("m", "f", "t", "v")
    assert list(tmp_path.iterdir()) == []


def test_the_shipped_page_has_the_markers() -> None:
    text = (ROOT / "docs" / "performance.md").read_text()
    assert text.index(table.BEGIN) < text.index(table.END)
    assert json.dumps(table.BEGIN)  # the markers are plain text

"""Writing the reports: all files after a run, summary.json last, none at all after an interruption."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import orchestrator.report.output as output
from orchestrator.report import build_summary, report_run, summary_bytes, write_reports
from tests.unit.report.conftest import Run

T0, T1 = "2025-01-01T12:00:00.000Z", "2025-01-01T12:30:00.000Z"


def test_report_run_writes_everything_and_returns_the_exit_code(run: Run) -> None:
    code = report_run(run.dir, run.suite, run.results, full_suite=True, started_at=T0, finished_at=T1)
    assert code == 2
    for name in ("report.md", "report.html", "junit.xml", "summary.json"):
        assert (run.dir / name).stat().st_size > 0
    written = (run.dir / "summary.json").read_bytes()
    assert written == summary_bytes(build_summary(run.dir, run.suite, run.results, True, T0, T1))
    assert json.loads(written)["exit_code"] == 2
    assert not list(run.dir.glob(".*.tmp"))


def test_summary_is_written_last(run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    order: list[str] = []
    real = output._write_atomic

    def spy(path: Path, data: bytes) -> None:
        order.append(path.name)
        real(path, data)

    monkeypatch.setattr(output, "_write_atomic", spy)
    write_reports(run.dir, build_summary(run.dir, run.suite, run.results, True, T0, T1))
    assert order == ["report.md", "report.html", "junit.xml", "summary.json"]


def test_interrupted_write_leaves_no_summary(run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    summary = build_summary(run.dir, run.suite, run.results, True, T0, T1)
    write_reports(run.dir, summary)  # a summary from an earlier write must not survive a failed rewrite
    assert (run.dir / "summary.json").exists()

    def interrupted(_: object) -> bytes:
        raise KeyboardInterrupt

    monkeypatch.setattr(output, "render_junit", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_reports(run.dir, summary)
    assert not (run.dir / "summary.json").exists()
    assert not list(run.dir.glob(".*.tmp"))


def test_interrupted_rename_leaves_no_summary(run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    summary = build_summary(run.dir, run.suite, run.results, True, T0, T1)

    def failing_replace(src: object, dst: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError, match="disk full"):
        write_reports(run.dir, summary)
    assert not (run.dir / "summary.json").exists()
    assert not list(run.dir.glob(".*.tmp"))


def test_an_invalid_summary_writes_nothing(run: Run) -> None:
    summary = build_summary(run.dir, run.suite, run.results, True, T0, T1)
    summary["exit_code"] = 3
    with pytest.raises(ValueError, match="exit_code"):
        write_reports(run.dir, summary)
    assert not [p for p in run.dir.iterdir() if p.is_file() and p.name != "suite.json"]

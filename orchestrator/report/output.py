"""Writing a run's reports: each file atomically, summary.json last, so an interrupted run has no summary."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from orchestrator.evidence import validate
from orchestrator.report.html import render_html
from orchestrator.report.junit import render_junit
from orchestrator.report.markdown import render_markdown
from orchestrator.report.summary import SUMMARY_FORMAT, build_summary, summary_bytes

__all__ = ["REPORT_FILES", "SUMMARY_FILE", "report_run", "write_reports"]

SUMMARY_FILE = "summary.json"
REPORT_FILES = ("report.md", "report.html", "junit.xml")


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with tmp.open("wb") as f:
            f.write(data)
            f.flush()
            # On disk before the rename: after a crash the name points at whole content or at nothing.
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_reports(run_dir: Path, summary: dict[str, Any]) -> None:
    """Write report.md, report.html and junit.xml, then summary.json; any failure leaves no summary.json."""
    validate(summary, SUMMARY_FORMAT, "summary")
    # A summary left from an earlier write would vouch for reports this call may fail to replace.
    (run_dir / SUMMARY_FILE).unlink(missing_ok=True)
    _write_atomic(run_dir / "report.md", render_markdown(summary).encode())
    _write_atomic(run_dir / "report.html", render_html(summary).encode())
    _write_atomic(run_dir / "junit.xml", render_junit(summary))
    _write_atomic(run_dir / SUMMARY_FILE, summary_bytes(summary))


def report_run(
    run_dir: Path,
    suite: dict[str, Any],
    results: list[dict[str, Any]],
    *,
    full_suite: bool,
    started_at: str,
    finished_at: str,
) -> int:
    """Build the summary, write every report (summary.json last), return the exit code the run ends with."""
    summary = build_summary(run_dir, suite, results, full_suite, started_at, finished_at)
    write_reports(run_dir, summary)
    code: int = summary["exit_code"]
    return code

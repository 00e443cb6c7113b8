"""Run reports written after every episode: report.md, report.html, junit.xml, and summary.json last."""

from __future__ import annotations

from orchestrator.report.html import render_html
from orchestrator.report.junit import render_junit
from orchestrator.report.markdown import render_markdown
from orchestrator.report.output import REPORT_FILES, SUMMARY_FILE, report_run, write_reports
from orchestrator.report.summary import (
    EXIT_CODES,
    SUMMARY_FORMAT,
    Interruption,
    build_summary,
    summary_bytes,
    without_timestamps,
)

__all__ = [
    "EXIT_CODES",
    "REPORT_FILES",
    "SUMMARY_FILE",
    "SUMMARY_FORMAT",
    "Interruption",
    "build_summary",
    "render_html",
    "render_junit",
    "render_markdown",
    "report_run",
    "summary_bytes",
    "without_timestamps",
    "write_reports",
]

"""Writing a run's reports: each file atomically, summary.json last, so a run that dies while writing them has no
summary (one stopped by Ctrl-C or SIGTERM writes its partial reports, marked interrupted, before it exits)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from orchestrator.evidence import validate
from orchestrator.report.html import html_chunks, render_html
from orchestrator.report.junit import junit_chunks, render_junit
from orchestrator.report.markdown import markdown_chunks, render_markdown
from orchestrator.report.summary import SUMMARY_FORMAT, Interruption, SummaryBuilder, summary_bytes, summary_chunks

__all__ = ["REPORT_FILES", "SUMMARY_FILE", "report_run", "write_reports", "write_streamed"]

SUMMARY_FILE = "summary.json"
REPORT_FILES = ("report.md", "report.html", "junit.xml")


def _write_atomic(path: Path, data: bytes | Iterable[bytes]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with tmp.open("wb") as f:
            for piece in [data] if isinstance(data, bytes) else data:
                f.write(piece)
            f.flush()
            # On disk before the rename: after a crash the name points at whole content or at nothing.
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _encoded(chunks: Iterable[str]) -> Iterator[bytes]:
    return (c.encode() for c in chunks)


def write_reports(run_dir: Path, summary: dict[str, Any]) -> None:
    """Write report.md, report.html and junit.xml, then summary.json; any failure leaves no summary.json."""
    validate(summary, SUMMARY_FORMAT, "summary")
    # A summary left from an earlier write would vouch for reports this call may fail to replace.
    (run_dir / SUMMARY_FILE).unlink(missing_ok=True)
    _write_atomic(run_dir / "report.md", render_markdown(summary).encode())
    _write_atomic(run_dir / "report.html", render_html(summary).encode())
    _write_atomic(run_dir / "junit.xml", render_junit(summary))
    _write_atomic(run_dir / SUMMARY_FILE, summary_bytes(summary))


def write_streamed(
    run_dir: Path,
    builder: SummaryBuilder,
    *,
    full_suite: bool,
    started_at: str,
    finished_at: str,
    interrupted: Interruption | None = None,
) -> int:
    """write_reports for episodes streamed into `builder`: each file written in pieces, never whole in memory."""
    header = builder.header(full_suite, started_at, finished_at, interrupted)
    (run_dir / SUMMARY_FILE).unlink(missing_ok=True)
    _write_atomic(run_dir / "report.md", _encoded(markdown_chunks(header, builder.views())))
    _write_atomic(run_dir / "report.html", _encoded(html_chunks(header, builder.views())))
    _write_atomic(run_dir / "junit.xml", junit_chunks(header, builder.views()))
    _write_atomic(run_dir / SUMMARY_FILE, (c.encode("ascii") for c in summary_chunks(header, builder.views())))
    code: int = header["exit_code"]
    return code


def _episode_page(run_dir: Path, result: dict[str, Any]) -> None:
    from orchestrator.paths import RunPaths
    from orchestrator.report.episode_page import write_episode_page

    try:
        paths = RunPaths(run_dir).episode(result["harness"], result["scenario"])
    except ValueError:
        return
    if paths.scenario.is_file() and not paths.root.is_symlink():
        write_episode_page(paths, result)


def report_run(
    run_dir: Path,
    suite: dict[str, Any],
    results: list[dict[str, Any]],
    *,
    full_suite: bool,
    started_at: str,
    finished_at: str,
    interrupted: Interruption | None = None,
) -> int:
    """Build the summary, write every report (summary.json last), return the exit code the run ends with.

    `interrupted`: the run was stopped before its end; `results` are the episodes it started (finished or cut
    short), and the summary says so."""
    builder = SummaryBuilder(run_dir, suite)
    try:
        for r in results:
            _episode_page(run_dir, r)
            builder.add(r)
        return write_streamed(
            run_dir,
            builder,
            full_suite=full_suite,
            started_at=started_at,
            finished_at=finished_at,
            interrupted=interrupted,
        )
    finally:
        builder.close()

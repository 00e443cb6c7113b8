"""Reports streamed from the summary builder: any order of episodes gives the same bytes, and memory stays flat."""

from __future__ import annotations

import random
import tracemalloc
from pathlib import Path
from typing import Any

from orchestrator.report import REPORT_FILES, SUMMARY_FILE, build_summary, render_html, render_junit, summary_bytes
from orchestrator.report.output import write_streamed
from orchestrator.report.summary import SummaryBuilder
from tests.unit.report.conftest import NASTY, Run, checks, make_suite, result, write_run

T0, T1 = "2025-01-01T12:00:00.000Z", "2025-01-01T12:30:00.000Z"


def _stream(run_dir: Path, suite: dict[str, Any], results: list[dict[str, Any]]) -> dict[str, bytes]:
    builder = SummaryBuilder(run_dir, suite)
    for r in results:
        builder.add(r)
    write_streamed(run_dir, builder, full_suite=True, started_at=T0, finished_at=T1)
    builder.close()
    return {name: (run_dir / name).read_bytes() for name in (*REPORT_FILES, SUMMARY_FILE)}


def test_episodes_in_any_order_give_the_same_files(run: Run) -> None:
    first = _stream(run.dir, run.suite, run.results)
    shuffled = list(run.results)
    random.Random(7).shuffle(shuffled)
    assert _stream(run.dir, run.suite, shuffled) == first
    summary = build_summary(run.dir, run.suite, run.results, True, T0, T1)
    assert first[SUMMARY_FILE] == summary_bytes(summary)
    assert first["report.html"] == render_html(summary).encode()
    assert first["junit.xml"] == render_junit(summary)


def _many(tmp: Path, n: int) -> tuple[Path, dict[str, Any], list[dict[str, Any]]]:
    scenarios = [f"s{i:05d}" for i in range(n)]
    results = [
        result("reference", s, "fail", checks(tools__witness_output=("fail", [f"{NASTY} {s}"])))
        if i % 10 == 0
        else result("reference", s, "pass", checks())
        for i, s in enumerate(scenarios)
    ]
    suite = make_suite(["reference"], scenarios[:1])
    suite["scenarios"] = [{"name": s, "sha256": f"{i:064x}"} for i, s in enumerate(scenarios)]
    suite["inputs"] = {f"scenarios/{s}.yaml": f"{i:064x}" for i, s in enumerate(scenarios)}
    run = write_run(tmp / f"run{n}", suite, results)
    return run.dir, run.suite, results


def _peak_writing(run_dir: Path, suite: dict[str, Any], results: list[dict[str, Any]]) -> int:
    builder = SummaryBuilder(run_dir, suite)
    for r in results:
        builder.add(r)
    tracemalloc.start()
    try:
        write_streamed(run_dir, builder, full_suite=True, started_at=T0, finished_at=T1)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        builder.close()


def test_writing_the_reports_takes_no_more_memory_for_ten_times_the_episodes(tmp_path: Path) -> None:
    small = _peak_writing(*_many(tmp_path, 200))
    large = _peak_writing(*_many(tmp_path, 2000))
    # The files grow tenfold; what is held while writing them must not (a row of cells is spooled past 4 KiB).
    assert (tmp_path / "run2000" / "report.html").stat().st_size > 9 * (
        tmp_path / "run200" / "report.html"
    ).stat().st_size
    assert large < 1.5 * small + (1 << 20), (small, large)

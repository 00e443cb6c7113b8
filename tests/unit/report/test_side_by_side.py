"""A results page with a newest release's run saved beside the pinned one shows both: each scenario's verdict at each
and drift's changed checks; without one the page is exactly as before."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from orchestrator.evidence import FormatError
from orchestrator.report.results import render_results

ROOT = Path(__file__).resolve().parents[3]
RESULTS = ROOT / "docs" / "results"
REGENERATE = "harness-probe results render reference"
OVERRIDE = {
    "kind": "version",
    "pinned": "0.1.0",
    "package": "pypi:probe-reference",
    "version": "0.2.0",
    "ran": "probe-reference 0.2.0",
}


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    """A copy of the published reference run: the pinned run of the page."""
    dest = tmp_path / "runs" / "reference"
    shutil.copytree(RESULTS / "runs" / "reference", dest)
    return dest


def _newest(saved: Path, edit: Any = None) -> dict[str, Any]:
    """The pinned run saved again as the newest release's (with the override record such a run carries)."""
    folder = saved / "newest"
    shutil.copytree(saved, folder, ignore=shutil.ignore_patterns("newest"))
    summary = json.loads((folder / "summary.json").read_text())
    summary["harness_overrides"] = {"reference": dict(OVERRIDE)}
    if edit:
        edit(summary)
    (folder / "summary.json").write_text(json.dumps(summary))
    return summary


def _scenario(summary: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(s for s in summary["harnesses"][0]["scenarios"] if s["scenario"] == name)
    return found


def _regress_tool_success(summary: dict[str, Any]) -> None:
    summary["verdict"] = summary["harnesses"][0]["verdict"] = "fail"
    episode = _scenario(summary, "tool_success")
    episode["verdict"] = "fail"
    check = next(c for c in episode["checks"] if c["id"] == "tools.record")
    check["status"], check["reasons"] = "fail", ["tool call call_1 is not recorded"]


def _scenarios(saved: Path) -> int:
    """How many scenarios the published run holds (the whole catalogue when it was made)."""
    return int(json.loads((saved / "summary.json").read_text())["counts"]["episodes"])


def test_without_a_newest_run_the_page_is_the_published_one(saved: Path) -> None:
    assert render_results(saved, "reference", REGENERATE) == (RESULTS / "reference.md").read_text()


def test_a_changed_verdict_is_shown_with_the_checks_that_changed(saved: Path) -> None:
    _newest(saved, _regress_tool_success)
    page = render_results(saved, "reference", REGENERATE)
    before = (RESULTS / "reference.md").read_text()
    assert page.startswith(before)  # the pinned page is untouched; the section follows it
    section = page[len(before) :]
    assert section.startswith("\n## Pinned `probe-reference 0.1.0` beside newest `probe-reference 0.2.0`\n")
    assert "its verdict: **fail**." in section
    assert "\n- reference: pin 0.1.0 overridden by release 0.2.0; version that ran: probe-reference 0.2.0\n" in section
    assert "| scenario | pinned `probe-reference 0.1.0` | newest `probe-reference 0.2.0` |" in section
    assert "| `tool_success` | ✓ pass | ✗ fail | `tools.record` [P0]: ✓ pass → ✗ fail |" in section
    assert "| `retry_429` | ✓ pass | ✓ pass | no check changed |" in section
    assert "1 check result(s) changed status, 1 P0 regression(s)." in section
    assert section.count("no check changed") == _scenarios(saved) - 1  # every other scenario of the run


def test_newest_equal_to_pinned_shows_no_check_changed(saved: Path) -> None:
    # The negative control: the same results at both versions.
    _newest(saved)
    section = render_results(saved, "reference", REGENERATE).split("## Pinned ", 1)[1]
    assert section.count("| ✓ pass | ✓ pass | no check changed |") == _scenarios(saved)
    assert "No check changed status in any scenario compared." in section
    assert "→" not in section and "regression" not in section and "not compared" not in section


def test_a_scenario_only_one_run_has_is_named_not_compared(saved: Path) -> None:
    def drop(summary: dict[str, Any]) -> None:
        summary["harnesses"][0]["scenarios"].remove(_scenario(summary, "wrong_answer"))

    _newest(saved, drop)
    section = render_results(saved, "reference", REGENERATE).split("## Pinned ", 1)[1]
    assert "- not compared: wrong\\_answer: no result in the other run" in section
    assert "`wrong_answer`" not in section


def test_an_unreadable_newest_summary_is_a_format_error(saved: Path) -> None:
    _newest(saved, lambda s: s.pop("run_id"))
    with pytest.raises(FormatError):
        render_results(saved, "reference", REGENERATE)

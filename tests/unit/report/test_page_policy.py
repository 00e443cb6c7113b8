"""What a hostile harness's text can do to the pages: nothing runs but their own script, and no value makes a page
(or junit.xml) megabytes long. The results pages' version strings: test_results_page.py."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path

from orchestrator.report import build_summary, render_html, render_junit
from orchestrator.report.episode_page import VALUE_CHARS, render_episode, write_episode_page
from tests.browser import browser_page
from tests.unit.report.conftest import Run
from tests.unit.report.test_episode_page import _episode, _judged

T0, T1 = "2025-01-01T12:00:00.000Z", "2025-01-01T12:30:00.000Z"
_POLICY = re.compile(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">')
_SCRIPT = re.compile(r"<script>(.*?)</script>", re.S)
HUGE = "<" * 3_000_000


def _hash_of(page: str) -> str:
    [script] = _SCRIPT.findall(page)
    return "sha256-" + base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()


def _episode_page(tmp_path: Path, output: str = "ok") -> tuple[str, Path]:
    paths = _episode(tmp_path, "tool_success")
    rollout = json.loads(paths.rollout.read_text())
    rollout["tool_calls"][0]["output"] = output
    ev, result = _judged(paths, rollout)
    page = write_episode_page(paths, result, ev)
    assert page is not None
    return render_episode(ev, result, paths.root), page


def test_each_page_allows_its_own_script_by_hash_and_nothing_else(tmp_path: Path, run: Run) -> None:
    report = render_html(build_summary(run.dir, run.suite, run.results, True, T0, T1))
    episode, _ = _episode_page(tmp_path)
    for page in (report, episode):
        [policy] = _POLICY.findall(page)
        assert policy.startswith("default-src 'none'; ")
        assert f"script-src '{_hash_of(page)}';" in policy
        assert "unsafe-inline" not in policy.split("script-src", 1)[1].split(";", 1)[0]
        # Before anything it governs: the policy is in the head, ahead of the style and the script.
        assert page.index("Content-Security-Policy") < page.index("<style>") < page.index("<script>")


def test_a_script_that_slipped_past_the_escapes_does_not_run_and_the_page_s_own_does(tmp_path: Path) -> None:
    _, page = _episode_page(tmp_path)
    text = page.read_text()
    # As if an escape had been missed: markup of the harness's in the page as it is.
    page.write_text(
        text.replace(
            "</body>", '<script>document.title = "ran"</script><img src=x onerror="document.title=\'ran\'"></body>'
        )
    )
    with browser_page() as (browser, errors):
        browser.goto(page.as_uri())
        browser.click("button[data-open='1']")  # the page's own script runs under the policy
        assert browser.locator("details.history[open]").count() == browser.locator("details.history").count() > 0
        assert browser.title() != "ran"
        assert any("Content Security Policy" in e for e in errors), errors


def test_a_megabyte_value_is_shown_by_its_start(tmp_path: Path) -> None:
    page, _ = _episode_page(tmp_path, output=HUGE)
    assert len(page) < 200_000
    assert f"the first {VALUE_CHARS:,} of {len(HUGE):,} characters" in page


def test_a_reason_quoting_a_megabyte_output_is_shortened_in_report_html_and_junit(run: Run) -> None:
    failing = next(c for r in run.results for c in r["checks"] if c["status"] == "fail")
    failing["reasons"] = [f"call_1: output {HUGE!r}, the model saw 'ok'"]
    summary = build_summary(run.dir, run.suite, run.results, True, T0, T1)
    assert len(render_html(summary)) < 200_000
    assert len(render_junit(summary)) < 200_000

"""report.md, report.html and junit.xml: the same grid, grouped and escaped, self-contained, parseable."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

import pytest

from orchestrator.report import build_summary, render_html, render_junit, render_markdown
from tests.unit.report.conftest import Run

T0, T1 = "2025-01-01T12:00:00.000Z", "2025-01-01T12:30:00.000Z"


@pytest.fixture
def summary(run: Run) -> dict[str, Any]:
    return build_summary(run.dir, run.suite, run.results, True, T0, T1)


def _section(md: str, harness: str) -> str:
    return md.split(f"## {harness}: ", 1)[1].split("\n## ", 1)[0]


def test_markdown_groups_rows_with_legend_and_symbols(summary: dict[str, Any]) -> None:
    md = render_markdown(summary)
    assert "Legend: ✓ pass, ✗ fail, — not applicable" in md and ", · not run" in md
    assert "verdict: **error** (exit code 2)" in md
    ref = _section(md, "reference")
    lines = ref.splitlines()
    assert lines[2] == "| check | tier | `tool_failure` | `tool_success` |"
    groups = [i for i, ln in enumerate(lines) if ln.startswith("| **")]
    assert [lines[i].split("**")[1] for i in groups] == ["Schema", "Semantic", "Behavioral", "Process"]
    # Each check sits under its own kind's heading.
    assert groups[0] < lines.index("| `rollout.schema` | P0 | ✓ | ✓ |") < groups[1]
    assert groups[1] < lines.index("| `calls.outcome` | P0 | ✓ | ✓ |") < groups[2]
    assert lines.index("| `tools.witness_output` | P0 | ✗ | ✓ |") > groups[2]
    assert "| `witness.no_egress` | P1 | ✓ | — |" in lines
    # Exit status sits apart, under its own heading; the timed-out episode has none to judge.
    assert lines.index("| `process.exit_status` | P1 | — | ✓ |") > groups[3]
    # The skipped episode has no results: its column says "not run".
    assert "| `rollout.schema` | P0 | · | ✗ |" not in md
    assert "| `calls.outcome` | P0 | · | ✗ |" in _section(md, "hermes")


def test_markdown_scenario_rows_and_escaping(summary: dict[str, Any]) -> None:
    md = render_markdown(summary)
    assert "<script>" not in md and "\x1b" not in md
    row = next(ln for ln in _section(md, "reference").splitlines() if ln.startswith("| `tool_failure` | ✗ fail"))
    assert "killed at the 300 s timeout" in row
    assert r'`tools.witness_output`: tool call call\_2: output "' in row  # quotes need no escape
    # The escape `clean` made of ESC is itself escaped, so it renders as the text `\x1b`.
    assert r"\<script\>alert\(1\)\</script\> \& \\x1b\[31mred" in row
    hermes = _section(md, "hermes")
    assert "| `tool_success` | error | error: APIError: 500 Server Error: network create failed |" in hermes
    assert "| `tool_failure` | skipped | skipped: hermes has no shell tool exit codes | skipped |  |" in hermes
    assert "## Errors" in md and "hermes/tool\\_success: episode error" in md


def test_markdown_mentions_nobody_a_harness_names() -> None:
    from orchestrator.report.markdown import md

    # Pasted into a pull request, `@team` in harness text would notify the team; as an entity it renders as "@".
    assert md("ping @octocat and @org/team, a@b") == "ping &#64;octocat and &#64;org/team, a&#64;b"
    assert md("& <b>") == r"\& \<b\>"  # the other escapes are untouched


def test_html_is_self_contained_and_escaped(summary: dict[str, Any]) -> None:
    page = render_html(summary)
    assert page.startswith("<!DOCTYPE html>")
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page, re.I)
    assert not re.search(r"https?://|<link|@import|url\(", page, re.I)
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt; &amp; \\x1b[31mred" in page
    assert page.count("<script>") == 1  # ours, inline
    assert "second reason &amp; more" in page
    # Every check cell opens onto its status, location and reasons.
    cells = re.findall(r'<td class="cell (\w+)"', page)
    assert len(cells) == 7 * 4 and cells.count("fail") == 4 and cells.count("na") == 2 and cells.count("none") == 7
    assert "<dt>location</dt><dd><code>$.tool_calls[*].output</code></dd>" in page
    assert page.count("<details>") == len(cells)
    for title in ("Schema", "Semantic", "Behavioral", "Process"):
        assert f">{title}</th></tr>" in page


def test_junit_counts_and_messages(summary: dict[str, Any]) -> None:
    root = ET.fromstring(render_junit(summary))
    assert root.tag == "testsuites"
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert list(suites) == ["hermes", "reference"]
    ref = suites["reference"]
    cases = ref.findall("testcase")
    assert len(cases) == 14 and ref.get("tests") == "14"
    assert {c.get("classname") for c in cases} == {"reference.tool_failure", "reference.tool_success"}
    assert (ref.get("failures"), ref.get("skipped"), ref.get("errors")) == ("1", "2", "0")
    failed = next(c for c in cases if c.find("failure") is not None)
    assert (failed.get("classname"), failed.get("name")) == ("reference.tool_failure", "tools.witness_output")
    failure = failed.find("failure")
    assert failure is not None and failure.text is not None
    assert failure.get("message", "").startswith('tool call call_2: output "<script>alert(1)</script> & \\x1b[31m')
    assert "second reason & more" in failure.text and "location: $.tool_calls[*].output" in failure.text
    hermes = suites["hermes"]
    # 7 checks of the error episode + its `execution` error + the skipped episode's `execution`.
    assert hermes.get("tests") == "9" and len(hermes.findall("testcase")) == 9
    assert (hermes.get("failures"), hermes.get("errors"), hermes.get("skipped")) == ("3", "1", "1")
    execution = [c for c in hermes.findall("testcase") if c.get("name") == "execution"]
    assert [c.get("classname") for c in execution] == ["hermes.tool_failure", "hermes.tool_success"]
    error = execution[1].find("error")
    assert error is not None and error.get("message") == "APIError: 500 Server Error: network create failed"
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == (
        "23",
        "4",
        "1",
        "3",
    )


def test_junit_reports_missing_episodes(run: Run) -> None:
    summary = build_summary(run.dir, run.suite, run.results[:1], False, T0, T1)
    root = ET.fromstring(render_junit(summary))
    missing = [c for c in root.iter("testcase") if c.find("error") is not None]
    assert sorted(c.get("classname") or "" for c in missing) == [
        "hermes.tool_failure",
        "hermes.tool_success",
        "reference.tool_failure",
    ]


def test_reports_list_the_first_reasons_of_a_check_and_say_how_many_more(run: Run) -> None:
    """A check failing with a reason per call of a very large episode: report.md, report.html and junit.xml each
    list MAX_REASONS of them and say how many more scenario_result.json holds; fewer are listed whole."""
    from orchestrator.report.table import MAX_REASONS, listed

    many = [f"call_{i}: collected marker file missing" for i in range(MAX_REASONS + 5)]
    assert listed(many) == (many[:MAX_REASONS], "… 5 more in scenario_result.json")
    assert listed(many[:3]) == (many[:3], None)
    failing = next(c for r in run.results for c in r["checks"] if c["status"] == "fail")
    failing["reasons"] = many
    summary = build_summary(run.dir, run.suite, run.results, True, T0, T1)
    junit = render_junit(summary).decode()
    for text in (render_markdown(summary).replace("\\_", "_"), render_html(summary), junit):  # md escapes _
        assert f"call_{MAX_REASONS - 1}:" in text and f"call_{MAX_REASONS}:" not in text
        assert "… 5 more in scenario_result.json" in text

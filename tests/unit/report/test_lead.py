"""The reports lead with words: overview, what each harness gets wrong, links to episode pages, every reason."""

from __future__ import annotations

import re
from typing import Any

import pytest

from orchestrator.checks.catalogue import LIES
from orchestrator.report import build_summary, render_html, render_markdown
from orchestrator.report.findings import label_cells, wrongs
from orchestrator.report.lead import markdown_lead
from orchestrator.report.table import HarnessView
from tests.unit.report.conftest import Run

T0, T1 = "2025-01-01T12:00:00Z", "2025-01-01T12:05:00Z"


@pytest.fixture
def summary(run: Run) -> dict[str, Any]:
    return build_summary(run.dir, run.suite, run.results, True, T0, T1)


def _failing(summary: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (h["name"], e["scenario"], c)
        for h in summary["harnesses"]
        for e in h["scenarios"]
        for c in e["checks"]
        if c["status"] == "fail"
    ]


def test_html_opens_with_overview_and_words_before_the_grid(summary: dict[str, Any]) -> None:
    page = render_html(summary)
    overview, wrong, grid = page.index("Overview"), page.index("self-report gets wrong"), page.index('class="checks"')
    assert overview < wrong < grid
    failing = [(h, s, c) for h, s, c in _failing(summary) if not c["reasons"][0].startswith("blocked")]
    assert failing, "the fixture run must fail somewhere"
    assert any(c["id"] in LIES for _h, _s, c in failing)
    for _h, _s, c in failing:
        if c["id"] in LIES:
            assert LIES[c["id"]].replace("'", "&#x27;").split("(")[0].strip() in page
    # Each example links to the episode page of the scenario it comes from.
    links = re.findall(r'<a class="episode" href="([^"]+)"', page)
    assert links and all(re.fullmatch(r"[^/]+/[^/]+/episode\.html", x) for x in links)


def test_every_grid_cell_links_to_its_episode_page(summary: dict[str, Any]) -> None:
    page = render_html(summary)
    cells = re.findall(r'<td class="cell [^"]*".*?</td>', page, flags=re.S)
    assert cells
    for cell in cells:
        assert re.search(r'href="[^"/]+/[^"/]+/episode\.html"', cell), cell[:300]


def test_markdown_gives_the_summary_first_and_every_reason_folded(summary: dict[str, Any]) -> None:
    text = render_markdown(summary)
    assert text.index("## Overview") < text.index("self-report gets wrong") < text.index("| check | tier |")
    for _h, s, c in _failing(summary):
        for reason in c["reasons"]:
            # md() escapes markup; compare on the words only.
            words = re.sub(r"[^A-Za-z0-9 ]", "", reason)[:40]
            assert words in re.sub(r"[^A-Za-z0-9 ]", "", text), (s, c["id"], reason)
    assert "<details><summary>" in text and "</details>" in text


def _check(cid: str, status: str, evidence: list[str], reasons: list[str] | None = None) -> dict[str, Any]:
    return {"id": cid, "status": status, "kind": "behavioral", "evidence": evidence, "reasons": reasons or []}


def test_overview_cells_count_the_failed_results_of_each_label() -> None:
    episodes = [
        {"checks": [_check("a", "fail", ["E1"]), _check("b", "pass", ["E1", "E2"]), _check("c", "not_applicable", [])]},
        {"checks": [_check("a", "fail", ["E1"]), _check("d", "fail", ["E2"], ["blocked by a"])]},
        {"checks": [{**_check("p", "fail", []), "kind": "process"}, _check("e", "not_applicable", ["E3", "E4"])]},
    ]
    cells = label_cells(iter(episodes))
    assert cells["E1"] == "✗ 2"  # two failed results; the pass beside them does not hide them
    assert cells["E2"] == "✓"  # a blocked failure speaks for no label: its blocker is counted
    assert cells["E3"] == cells["E4"] == "—"  # only not applicable: neither passed nor failed
    assert cells["process"] == "✗ 1"


@pytest.mark.parametrize(("failing", "listed"), [(30, 30), (31, 30), (10_000, 30)])
def test_a_finding_names_its_first_scenarios_and_counts_the_rest(failing: int, listed: int) -> None:
    episodes = [{"scenario": f"s{i}", "checks": [_check("a", "fail", ["E1"], ["why"])]} for i in range(failing)]
    view = HarnessView("h", "fail", {}, failing, (), lambda: iter(()), lambda: iter(episodes))
    (found,) = wrongs(view).items
    assert found.count == failing and found.scenarios == [f"s{i}" for i in range(listed)]
    more = f" and {failing - listed:,} more" if failing > listed else ""
    assert found.where() == ", ".join(f"s{i}" for i in range(listed)) + more
    assert found.where(lambda s: f"`{s}`").endswith(f"`s{listed - 1}`{more}")
    lead = "\n".join(markdown_lead([view]))
    assert f"in {', '.join(f's{i}' for i in range(listed))}{more})" in lead
    assert f"s{listed}," not in lead and f"s{listed})" not in lead  # the first name past those listed

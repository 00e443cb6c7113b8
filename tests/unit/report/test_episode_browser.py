"""The episode page of every captured real-harness episode renders in Chromium without a console error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.checks import run_checks, scope_of
from orchestrator.harnesses import NormalizeError, get_harness
from orchestrator.paths import EpisodePaths
from orchestrator.report.episode_page import write_episode_page
from orchestrator.verdict import collect_evidence
from tests.browser import browser_page
from tests.unit.harnesses import captured
from tests.unit.report.test_episode_page import hundred_calls

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
NATIVE = sorted(
    (h.name, e.name) for h in (FIXTURES / "native").iterdir() if h.is_dir() for e in h.iterdir() if e.is_dir()
)
EPISODES = sorted(p.name for p in (FIXTURES / "episodes").iterdir() if p.is_dir())


def _page(paths: EpisodePaths, harness: str, rollout: dict | None) -> Path:  # type: ignore[type-arg]
    scenario = json.loads(paths.scenario.read_text())
    ev = collect_evidence(scenario, paths, rollout, None if rollout is not None else "not normalized")
    checks = [c.to_json() for c in run_checks(ev, scope_of(scenario))]
    result = {"harness": harness, "scenario": paths.root.name, "verdict": "fail", "checks": checks}
    page = write_episode_page(paths, result, ev)
    assert page is not None
    return page


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    out = []
    root = tmp_path_factory.mktemp("pages")
    for harness, name in NATIVE:
        paths = captured.materialize(harness, name, root / harness / name)
        if not paths.witness.is_file() or not paths.scenario.is_file():
            continue
        try:  # in process: the normalizer's own child-process budget is tested elsewhere
            rollout = get_harness(harness).normalize(paths.native)
        except NormalizeError:
            rollout = None
        out.append(_page(paths, harness, rollout))
    for name in EPISODES:
        paths = captured.materialize("../episodes", name, root / "episodes" / name)
        out.append(_page(paths, "reference", json.loads(paths.rollout.read_text())))
    return out


def test_every_captured_episode_page_renders_without_console_errors(pages: list[Path]) -> None:
    assert len(pages) >= len(EPISODES) + 10  # the reference fixtures and the real harnesses' captures
    with browser_page() as (page, errors):
        for path in pages:
            page.goto(path.as_uri())
            assert page.locator("table.timeline tbody tr").count() > 0, path
            page.click("button[data-open='1']")  # the page's script runs
            assert page.locator("details.history[open]").count() == page.locator("details.history").count()
            assert errors == [], (path, errors)


def test_a_hundred_call_episode_page_loads_in_chromium(tmp_path: Path) -> None:
    """Not timed (a shared machine): it loads whole, its 100 rows there, no error."""
    ev, result, paths = hundred_calls(tmp_path)
    page_file = write_episode_page(paths, result, ev)
    assert page_file is not None
    with browser_page() as (page, errors):
        page.goto(page_file.as_uri())
        assert page.locator("table.timeline tr.call").count() == 100
        assert errors == []

"""A real reference run that drops its failed attempt: its episode page shows the lie, and report.html leads to it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser import browser_page
from tests.integration.conftest import Images, hp

pytestmark = pytest.mark.docker


def test_the_dropped_500_is_marked_on_its_row_and_the_report_links_to_it(images: Images, tmp_path: Path) -> None:
    run = tmp_path / "R"
    res = hp("run", "-H", "reference", "-s", "retry_500", "-a", "mode=drop_failed_attempt", "-o", str(run))
    assert res.code == 1, res.stderr[-2000:]
    episode = run / "reference" / "retry_500" / "episode.html"
    assert episode.is_file()
    with browser_page() as (page, errors):
        page.goto((run / "report.html").as_uri())
        # The words first: the lie in plain language, its example linked to the episode page.
        lie = page.locator("ul.wrongs li[data-check='attempts.multiset']")
        assert "missing from its record" in lie.inner_text()
        lie.locator("a.episode").click()
        page.wait_for_url("**/reference/retry_500/episode.html")
        row = page.locator("table.timeline tr.call.unrecorded")
        assert row.count() == 1
        text = row.inner_text()
        assert "witnessed, not recorded" in text
        assert "500" in row.locator("td.wire").inner_text()
        mark = row.locator(".mark[data-check='attempts.multiset']")
        assert mark.count() == 1
        assert "P0" in mark.inner_text() and "HTTP 500 failure: witnessed 1 times, recorded 0" in mark.inner_text()
        # The rows the rollout kept are joined to their attempts and not marked unrecorded.
        witness = (run / "reference" / "retry_500" / "witness.jsonl").read_text()
        assert page.locator("table.timeline tr.call").count() == witness.count('"event":"attempt"')
        assert page.locator("table.timeline tr.call.unwitnessed").count() == 0
        # Links are relative, to the files beside the page.
        page.locator("a[href='witness.jsonl']").wait_for()
        assert errors == []
    res = hp("view", str(run), "reference/retry_500", "--no-browser")
    assert res.code == 0 and res.stdout.strip() == str(episode.resolve())
    res = hp("checks", "explain", "attempts.multiset")
    assert res.code == 0
    for part in ("question:", "tier:       P0", "E1 (attempts)", "lie caught:"):
        assert part in res.stdout

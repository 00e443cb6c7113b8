"""episode.html: rows joined as the checks join them, the lie marked on its row, hostile text kept inert."""

from __future__ import annotations

import copy
import html.parser
import json
import shutil
from pathlib import Path
from typing import Any

from orchestrator.checks import run_checks, scope_of
from orchestrator.paths import EpisodePaths
from orchestrator.report.episode_page import PAGE, render_episode, write_episode_page
from orchestrator.verdict import collect_evidence

EPISODES = Path(__file__).resolve().parents[2] / "fixtures" / "episodes"


class _Rows(html.parser.HTMLParser):
    """The class and the text of each timeline row, and every script's text."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[tuple[str, str]] = []
        self.scripts: list[str] = []
        self._row: list[str] | None = None
        self._cls = ""
        self._script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr":
            self._row, self._cls = [], dict(attrs).get("class") or ""
        self._script = tag == "script"

    def handle_endtag(self, tag: str) -> None:
        if tag == "tr" and self._row is not None:
            self.rows.append((self._cls, " ".join(self._row)))
            self._row = None
        if tag == "script":
            self._script = False

    def handle_data(self, data: str) -> None:
        if self._script:
            self.scripts.append(data)
        elif self._row is not None:
            self._row.append(data)


def _episode(tmp_path: Path, name: str) -> EpisodePaths:
    shutil.copytree(EPISODES / name, tmp_path / name)
    return EpisodePaths(tmp_path / name)


def _judged(paths: EpisodePaths, rollout: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    scenario = json.loads(paths.scenario.read_text())
    ev = collect_evidence(scenario, paths, rollout, None)
    checks = [c.to_json() for c in run_checks(ev, scope_of(scenario))]
    result = {"harness": "fixture", "scenario": paths.root.name, "verdict": "fail", "checks": checks}
    return ev, result


def _parse(page: str) -> _Rows:
    p = _Rows()
    p.feed(page)
    return p


def test_a_dropped_failed_attempt_is_marked_on_its_row_with_the_failing_check(tmp_path: Path) -> None:
    paths = _episode(tmp_path, "retry_429")
    rollout = json.loads(paths.rollout.read_text())
    dropped = rollout["model_calls"].pop(0)  # the 429 the wire shows first
    assert dropped["status_code"] == 429
    for step in rollout["steps"]:
        step["model_call_refs"] = [r for r in step["model_call_refs"] if r != dropped["model_call_id"]]
    ev, result = _judged(paths, rollout)
    assert "attempts.multiset" in [c["id"] for c in result["checks"] if c["status"] == "fail"]
    rows = [r for r in _parse(render_episode(ev, result, paths.root)).rows if "call" in r[0].split()]
    # The join pairs the kept 429 with the earliest witnessed one: the later 429 is the one left unrecorded.
    unrecorded = [t for c, t in rows if "unrecorded" in c.split()]
    assert len(unrecorded) == 1
    assert "witnessed, not recorded" in unrecorded[0] and "429" in unrecorded[0]
    assert "attempts.multiset" in unrecorded[0]
    assert not [c for c, _ in rows if "unwitnessed" in c.split()]


def test_an_honest_episode_has_no_marked_row(tmp_path: Path) -> None:
    paths = _episode(tmp_path, "retry_429")
    ev, result = _judged(paths, json.loads(paths.rollout.read_text()))
    assert not [c for c in result["checks"] if c["status"] == "fail"]
    page = render_episode(ev, result, paths.root)
    assert all("flagged" not in c.split() for c, _ in _parse(page).rows)
    assert "Every applicable check passes" in page


def test_a_call_no_attempt_answers_is_recorded_never_witnessed(tmp_path: Path) -> None:
    paths = _episode(tmp_path, "tool_success")
    rollout = json.loads(paths.rollout.read_text())
    ghost = copy.deepcopy(rollout["model_calls"][0])
    ghost.update(model_call_id="mc-ghost", response_id="resp-never-sent")
    rollout["model_calls"].insert(1, ghost)
    ev, result = _judged(paths, rollout)
    rows = _parse(render_episode(ev, result, paths.root)).rows
    ghost_rows = [(c, t) for c, t in rows if "mc-ghost" in t]
    assert len(ghost_rows) == 1
    assert "unwitnessed" in ghost_rows[0][0].split() and "recorded, never witnessed" in ghost_rows[0][1]


def test_hostile_rollout_text_stays_text(tmp_path: Path) -> None:
    paths = _episode(tmp_path, "tool_success")
    rollout = json.loads(paths.rollout.read_text())
    evil = "</script><script>alert(1)</script><img src=x onerror=alert(2)> \ud800 \x1b[31m"
    rollout["model_calls"][0]["response_id"] = evil
    rollout["tool_calls"][0]["output"] = evil
    ev, result = _judged(paths, rollout)
    page = render_episode(ev, result, paths.root)
    page.encode("utf-8")  # no lone surrogate survives into the page
    parsed = _parse(page)
    assert len(parsed.scripts) == 1 and "alert" not in parsed.scripts[0]
    assert "<img" not in page and "&lt;/script&gt;" in page
    assert any("alert(1)" in t for _, t in parsed.rows)  # shown, as text


def test_links_are_relative_and_the_page_is_written_beside_the_files(tmp_path: Path) -> None:
    paths = _episode(tmp_path, "tool_success")
    result = {"harness": "h", "scenario": "tool_success", "verdict": "pass", "checks": []}
    written = write_episode_page(paths, result)
    assert written == paths.root / PAGE
    page = written.read_text()
    for name in ("witness.jsonl", "rollout.json", "scenario.json"):
        assert f'href="{name}"' in page
    assert "http://" not in page and "https://" not in page  # nothing fetched from the network


def hundred_calls(tmp_path: Path) -> tuple[Any, dict[str, Any], EpisodePaths]:
    """tool_success grown to 100 model calls, each witnessed and recorded."""
    paths = _episode(tmp_path, "tool_success")
    rollout = json.loads(paths.rollout.read_text())
    witness = [json.loads(line) for line in paths.witness.read_text().splitlines()]
    attempts = [e for e in witness if e["event"] == "attempt"]
    base_call, base_attempt = rollout["model_calls"][-1], attempts[-1]
    others = [e for e in witness if e["event"] != "attempt"]
    calls, new_attempts = [], []
    for i in range(100):
        a = copy.deepcopy(base_attempt)
        a.update(attempt_id=f"attempt-{i}", response_id=f"resp-{i}", seq=i + 1)
        c = copy.deepcopy(base_call)
        c.update(model_call_id=f"mc-{i}", response_id=f"resp-{i}")
        new_attempts.append(a)
        calls.append(c)
    paths.witness.write_text("".join(json.dumps(e) + "\n" for e in [others[0], *new_attempts, *others[1:]]))
    rollout["model_calls"] = calls
    ev, result = _judged(paths, rollout)
    return ev, result, paths


def test_a_hundred_call_episode_renders(tmp_path: Path) -> None:
    """Not timed (the machine is shared): test_episode_browser renders it in Chromium; this proves the page whole."""
    ev, result, paths = hundred_calls(tmp_path)
    rows = [r for r in _parse(render_episode(ev, result, paths.root)).rows if "call" in r[0].split()]
    assert len(rows) == 100
    assert all(f"resp-{i}" in t for i, (_, t) in enumerate(rows))


def test_a_very_large_episode_shows_its_first_rows_and_says_how_many_more(tmp_path: Path, monkeypatch: Any) -> None:
    from orchestrator.report import episode_rows

    monkeypatch.setattr(episode_rows, "MAX_ROWS", 30)
    ev, result, paths = hundred_calls(tmp_path)
    page = render_episode(ev, result, paths.root)
    assert len([r for r in _parse(page).rows if "call" in r[0].split()]) == 30
    assert "70 more rows are not shown" in page


def test_a_reason_marks_the_rows_its_words_name_and_no_row_whose_id_is_only_part_of_a_word() -> None:
    """attempt-1 is not named by a reason about attempt-12; a full stop ends a sentence, not the id before it; a
    row's key of several words is found whole; a reason that names no row stays at the episode level."""
    from orchestrator.report.episode_rows import UNRECORDED, Row, ToolRow, _mark

    one = Row({"attempt_id": "attempt-1", "response_id": "chatcmpl-1"}, None)
    twelve = Row({"attempt_id": "attempt-12", "response_id": "chatcmpl-12"}, None)
    lost = Row({"attempt_id": "attempt-3", "status": 429, "ended": "complete"}, None, UNRECORDED)
    tool = ToolRow("call_2", None, None)
    failing = [
        {"id": "a.check", "tier": "P0", "reasons": ["attempt-12: recorded twice", "the reply chatcmpl-1."]},
        {"id": "b.check", "tier": "P1", "reasons": ["call_20: marker missing", "call_2: marker missing"]},
        {"id": "c.check", "tier": "P0", "reasons": ["HTTP 429 failure: 2 witnessed, 1 recorded", "no row at all"]},
    ]
    unplaced = _mark([one, twelve, lost], [tool], failing)
    assert [m.reason for m in one.marks] == ["the reply chatcmpl-1."]
    assert [m.reason for m in twelve.marks] == ["attempt-12: recorded twice"]
    assert [m.reason for m in tool.marks] == ["call_2: marker missing"]
    assert [m.reason for m in lost.marks] == ["HTTP 429 failure: 2 witnessed, 1 recorded"]
    assert [m.reason for m in unplaced] == ["call_20: marker missing", "no row at all"]


def test_every_one_of_many_reasons_is_placed_once() -> None:
    """A check failing on each of 20,000 tool calls: each reason marks exactly its own tool row (the placement looks
    reasons up by their words; it once tried every row's tokens against every reason, minutes for such a page)."""
    from orchestrator.report.episode_rows import Row, ToolRow, _mark

    tools = [ToolRow(f"call_{i}", None, None) for i in range(20_000)]
    rows = [Row({"attempt_id": f"attempt-{i}"}, None) for i in range(2_000)]
    reasons = [f"call_{i}: collected marker file missing" for i in range(20_000)]
    assert _mark(rows, tools, [{"id": "witness.tools_executed", "tier": "P0", "reasons": reasons}]) == []
    assert all([m.reason for m in t.marks] == [reasons[i]] for i, t in enumerate(tools))
    assert not any(r.marks for r in rows)


def test_a_check_with_more_reasons_than_the_page_lists_says_how_many_more(tmp_path: Path) -> None:
    from orchestrator.report.table import MAX_REASONS

    paths = _episode(tmp_path, "tool_success")
    ev, result = _judged(paths, json.loads(paths.rollout.read_text()))
    many = [f"call_x{i}: collected marker file missing" for i in range(MAX_REASONS + 7)]
    result["checks"].append({"id": "witness.tools_executed", "tier": "P0", "status": "fail", "reasons": many})
    page = render_episode(ev, result, paths.root)
    assert f"call_x{MAX_REASONS - 1}:" in page and f"call_x{MAX_REASONS}:" not in page
    assert f"{len(many)} reason(s)" in page and "… 7 more in scenario_result.json" in page


def test_a_gemini_episode_shows_its_protocol_and_the_contents_it_sent(tmp_path: Path) -> None:
    paths = _episode(tmp_path, "gemini_tool_success")
    rollout = json.loads(paths.rollout.read_text())
    ev, result = _judged(paths, rollout)
    page = render_episode(ev, result, paths.root)
    assert "gemini POST" in page and ":streamGenerateContent?alt=sse" in page
    # The last request's history is Gemini's `contents`: the task, then two calls with their results.
    assert "history sent: 5 message(s)" in page

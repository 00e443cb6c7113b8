"""`results publish --as newest`: a run of another release is saved beside the pinned run and the page shows both;
a run of the pin, of a local source, or with no pinned run saved is refused, and nothing saved changes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import orchestrator.cli.results as results_cli
from orchestrator.cli import app
from orchestrator.report import build_summary, summary_bytes
from tests.unit.report.conftest import checks, make_suite, result, write_run

RELEASE = {
    "kind": "version",
    "pinned": "1.0.0",
    "package": "pypi:hermes-agent",
    "version": "1.1.0",
    "ran": "hermes 1.1.0",
}
SOURCE = {
    "kind": "source",
    "pinned": "1.0.0",
    "source": "/src/hermes",
    "source_kind": "python-folder",
    "source_sha256": "c" * 64,
    "ran": "hermes 1.1.0.dev0",
}


@pytest.fixture
def docs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    docs = tmp_path / "repo" / "docs" / "results"
    (docs / "runs").mkdir(parents=True)
    monkeypatch.setattr(results_cli, "REPO_ROOT", tmp_path / "repo")
    monkeypatch.setattr(results_cli, "DOCS", docs)
    return docs


def _run(folder: Path, override: dict[str, Any] | None = None, failing: bool = False) -> Path:
    suite = make_suite(["hermes"], ["tool_success", "tool_failure"])
    if override:
        suite["harnesses"][0]["override"] = override
    statuses = (
        {"tools__witness_output": ("fail", ["tool call call_1: output is not the witnessed output"])} if failing else {}
    )
    results = [
        result("hermes", "tool_success", "fail" if failing else "pass", checks(**statuses)),
        result("hermes", "tool_failure", "pass", checks()),
    ]
    run = write_run(folder, suite, results)
    ran = (override or {}).get("ran", "hermes 1.0.0")
    for episode in ("tool_success", "tool_failure"):
        runtime = {"schema": "runtime/v1", "harness": {"name": "hermes", "version": ran}, "proxy": {"version": "p"}}
        (run.dir / "hermes" / episode / "runtime.json").write_text(json.dumps(runtime))
    summary = build_summary(run.dir, suite, run.results, False, "2025-01-01T12:00:00.000Z", "2025-01-01T12:30:00.000Z")
    (run.dir / "summary.json").write_bytes(summary_bytes(summary))
    return run.dir


def _publish(run: Path, *extra: str) -> Any:
    return CliRunner().invoke(app, ["results", "publish", str(run), "-H", "hermes", *extra])


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_newest_run_is_saved_beside_the_pin_and_shown_on_its_page(docs: Path, tmp_path: Path) -> None:
    res = _publish(_run(tmp_path / "pinned"))
    assert res.exit_code == 0, res.output
    pinned_page, matrix = (docs / "hermes.md").read_text(), (docs / "README.md").read_bytes()
    assert "beside newest" not in pinned_page
    res = _publish(_run(tmp_path / "newest", RELEASE, failing=True), "--as", "newest")
    assert res.exit_code == 0, res.output
    saved = docs / "runs" / "hermes" / "newest"
    assert (saved / "summary.json").read_bytes() == (tmp_path / "newest" / "summary.json").read_bytes()
    assert (saved / "hermes" / "runtime.json").is_file() and (saved / "evidence.tar.gz").is_file()
    page = (docs / "hermes.md").read_text()
    assert page.startswith(pinned_page)
    assert "## Pinned `hermes 1.0.0` beside newest `hermes 1.1.0`" in page[len(pinned_page) :]
    assert "| `tool_success` | ✓ pass | ✗ fail | `tools.witness_output` [P0]: ✓ pass → ✗ fail |" in page
    assert "| `tool_failure` | ✓ pass | ✓ pass | no check changed |" in page
    assert (docs / "README.md").read_bytes() == matrix  # the matrix lists the pins only
    # `results render` regenerates the same page from the saved runs.
    assert CliRunner().invoke(app, ["results", "render", "hermes"]).exit_code == 0
    assert (docs / "hermes.md").read_text() == page
    # Publishing the pin again drops the newest run (it was compared with the old one): the page is as before.
    res = _publish(_run(tmp_path / "pinned-again"))
    assert res.exit_code == 0 and "publish it again with --as newest" in res.output, res.output
    assert not saved.exists() and (docs / "hermes.md").read_text() == pinned_page


def test_newest_equal_to_the_pin_shows_no_check_changed(docs: Path, tmp_path: Path) -> None:
    assert _publish(_run(tmp_path / "pinned")).exit_code == 0
    res = _publish(_run(tmp_path / "newest", RELEASE), "--as", "newest")
    assert res.exit_code == 0, res.output
    page = (docs / "hermes.md").read_text()
    assert page.count("| ✓ pass | ✓ pass | no check changed |") == 2
    assert "No check changed status in any scenario compared." in page and "→" not in page


@pytest.mark.parametrize(
    ("override", "slot", "why"),
    [
        (None, "newest", "the run probed its pin of 'hermes', not another release"),
        (SOURCE, "newest", "the run probed a local source of 'hermes', not another release"),
        (RELEASE, "pinned", "probed another release of 'hermes', not its pin: it is not published as the pinned "),
        (SOURCE, "pinned", "probed a local source of 'hermes', not its pin"),
    ],
)
def test_a_run_in_the_wrong_slot_is_refused(
    docs: Path, tmp_path: Path, override: dict[str, Any] | None, slot: str, why: str
) -> None:
    assert _publish(_run(tmp_path / "pinned")).exit_code == 0
    before = _tree(docs)
    res = _publish(_run(tmp_path / "other", override), "--as", slot)
    assert res.exit_code == 2 and why in res.output, res.output
    assert _tree(docs) == before


def test_a_newest_run_without_a_pinned_run_saved_is_refused(docs: Path, tmp_path: Path) -> None:
    res = _publish(_run(tmp_path / "newest", RELEASE), "--as", "newest")
    assert res.exit_code == 2 and "'hermes' has no pinned run saved" in res.output, res.output
    assert _tree(docs) == {}


def test_an_unknown_slot_is_named_by_the_option_parser(docs: Path, tmp_path: Path) -> None:
    res = _publish(_run(tmp_path / "pinned"), "--as", "latest")
    assert res.exit_code == 2 and "'latest' is not one of" in res.output, res.output


def test_docs_inside_the_run_being_published_is_refused(docs: Path, tmp_path: Path) -> None:
    run = _run(tmp_path / "pinned")
    before = _tree(run)
    for inside in (run, run / "pages"):
        res = _publish(run, "--docs", str(inside))
        assert res.exit_code == 2 and "is inside the run" in res.output, res.output
    assert _tree(run) == before  # nothing written into the run
    assert _publish(run).exit_code == 0  # the same run into a folder of its own: published


def test_a_run_with_no_saved_episode_of_the_harness_says_so(docs: Path, tmp_path: Path) -> None:
    run = _run(tmp_path / "pinned")
    for episode in ("tool_success", "tool_failure"):
        (run / "hermes" / episode / "runtime.json").unlink()
    res = _publish(run)
    assert res.exit_code == 2 and "holds no hermes/*/runtime.json" in res.output, res.output

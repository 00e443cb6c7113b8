"""compare_runs on saved results: what changed per scenario, and the exit code a P0 regression gives."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from orchestrator.variants.drift import compare_runs


def _result(scenario: str, checks: dict[str, tuple[str, str]], verdict: str = "fail") -> dict[str, Any]:
    return {
        "scenario": scenario,
        "verdict": verdict,
        "checks": [{"id": k, "tier": t, "status": s} for k, (t, s) in checks.items()],
    }


def _write(run: Path, results: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    for r in results:
        folder = run / "pi" / r["scenario"]
        folder.mkdir(parents=True)
        (folder / "scenario_result.json").write_text(json.dumps(r))


@pytest.fixture(autouse=True)
def _plain_load(monkeypatch: pytest.MonkeyPatch) -> None:
    # The results here are cut down to what drift reads; the full schema is the suite's business.
    monkeypatch.setattr("orchestrator.variants.drift.load_json", lambda p, _fmt: json.loads(Path(p).read_text()))


def test_a_p0_check_that_newly_fails_is_a_regression(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(
        tmp_path / "a", [_result("s1", {"x": ("P0", "pass"), "y": ("P1", "pass"), "z": ("P0", "fail")})], monkeypatch
    )
    _write(
        tmp_path / "b", [_result("s1", {"x": ("P0", "fail"), "y": ("P1", "fail"), "z": ("P0", "pass")})], monkeypatch
    )
    report = compare_runs("pi", tmp_path / "a", tmp_path / "b")
    assert [(c.check, c.before, c.after) for c in report.changes] == [
        ("x", "pass", "fail"),
        ("y", "pass", "fail"),
        ("z", "fail", "pass"),
    ]
    assert [c.check for c in report.p0_regressions] == ["x"]
    assert report.exit_code == 1


def test_only_p1_or_improvements_exit_0(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path / "a", [_result("s1", {"y": ("P1", "pass"), "z": ("P0", "fail")})], monkeypatch)
    _write(tmp_path / "b", [_result("s1", {"y": ("P1", "fail"), "z": ("P0", "not_applicable")})], monkeypatch)
    assert compare_runs("pi", tmp_path / "a", tmp_path / "b").exit_code == 0


def test_an_errored_or_missing_episode_is_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path / "a", [_result("s1", {}), _result("s2", {})], monkeypatch)
    _write(tmp_path / "b", [_result("s1", {}, verdict="error")], monkeypatch)
    report = compare_runs("pi", tmp_path / "a", tmp_path / "b")
    assert report.exit_code == 2
    assert any("s2: no result in the other run" in e for e in report.errors)
    assert any("s1: the other run errored" in e for e in report.errors)


def test_runs_without_the_harness_are_an_error_not_a_clean_bill(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    report = compare_runs("pi", tmp_path / "a", tmp_path / "b")
    assert report.exit_code == 2 and "neither run holds a result" in report.errors[0]

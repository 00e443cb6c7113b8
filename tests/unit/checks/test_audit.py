"""Offline audit over golden episodes: no Docker, reports written, inputs guarded against change."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import orchestrator.audit as audit_mod
from orchestrator.audit import InputChanged, audit
from orchestrator.evidence import load_json
from orchestrator.suite import OutputExists
from tests.unit.checks.conftest import FIXTURES


def _layout(tmp_path: Path, *names: str) -> Path:
    src = tmp_path / "saved"
    for name in names:
        shutil.copytree(FIXTURES / name, src / "reference" / name)
    return src


def test_audit_of_bare_pairs_passes_and_writes_reports(tmp_path: Path) -> None:
    src = _layout(tmp_path, "tool_success", "retry_429")
    res = audit(src, tmp_path / "out")
    assert res.exit_code == 0
    assert [r["verdict"] for r in res.results] == ["pass", "pass"]
    summary = load_json(tmp_path / "out" / "summary.json", "probe-summary/v1")
    assert summary["full_suite"] is False
    record = load_json(tmp_path / "out" / "audit.json", "audit/v1")
    assert "reference/tool_success/witness.jsonl" in record["inputs"]
    for name in ("report.md", "report.html", "junit.xml"):
        assert (tmp_path / "out" / name).is_file()


def test_audit_finds_a_lie_in_a_saved_rollout(tmp_path: Path) -> None:
    src = _layout(tmp_path, "tool_success")
    rollout = src / "reference" / "tool_success" / "rollout.json"
    rollout.write_text(rollout.read_text().replace('"PROBE_DONE"', '"PROBE_DONE!"'))
    res = audit(src, tmp_path / "out")
    assert res.exit_code == 1
    failed = {c["id"] for c in res.results[0]["checks"] if c["status"] == "fail"}
    assert failed == {"outcome.final_answer"}


def test_an_input_changing_during_the_audit_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = _layout(tmp_path, "tool_success")
    real = audit_mod._audit_episode

    def tampering(*args, **kwargs):  # type: ignore[no-untyped-def]
        (src / "reference" / "tool_success" / "witness.jsonl").write_text("")
        return real(*args, **kwargs)

    monkeypatch.setattr(audit_mod, "_audit_episode", tampering)
    with pytest.raises(InputChanged, match=r"witness\.jsonl"):
        audit(src, tmp_path / "out")


def test_existing_output_and_empty_source_are_refused(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    with pytest.raises(OutputExists):
        audit(_layout(tmp_path, "tool_success"), tmp_path / "out")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no episodes found"):
        audit(tmp_path / "empty", tmp_path / "out2")

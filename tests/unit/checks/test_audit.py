"""Offline audit over golden episodes: no Docker, reports written, inputs guarded against change."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import orchestrator.audit as audit_mod
import orchestrator.audit_copy as audit_copy
import orchestrator.verdict as verdict_mod
from orchestrator.audit import InputChanged, audit
from orchestrator.errors import OutputExists
from orchestrator.evidence import load_json
from orchestrator.evidence.markers import read_markers
from orchestrator.paths import RunPaths
from orchestrator.runtime.collect import CollectLimits
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
    # The answer is edited in the outcome and in the history's last assistant turn alike.
    assert failed == {"outcome.final_answer", "history.witness_text"}


def test_a_run_s_own_files_do_not_draw_on_what_its_collection_could_copy(tmp_path: Path) -> None:
    # The caps exactly full with what a run collects, counted as it counts: the harness's log (its bytes, not its
    # file), the native logs' folder and file (not native/ itself, which the run made), the witness, the markers
    # folder and each marker. The rollout, scenario and runtime files the run wrote itself must still be copied,
    # and every marker: a 100,000-call episode's own rollout beside its witness is past the byte cap a run drew on.
    src = _layout(tmp_path, "tool_success")
    ep = src / "reference" / "tool_success"
    (ep / "harness.log").write_text("the harness's own words\n")
    (ep / "runtime.json").write_text("{}\n")
    native = ep / "native" / ".probe-reference" / "log.jsonl"
    native.parent.mkdir(parents=True)
    native.write_text("{}\n")
    markers = sorted((ep / "markers").iterdir())
    collected = sum(p.stat().st_size for p in [ep / "witness.jsonl", ep / "harness.log", native, *markers])
    limits = CollectLimits(max_bytes=collected, max_files=2 + 2 + len(markers))
    res = audit(src, tmp_path / "out", limits=limits)
    assert [r["verdict"] for r in res.results] == ["pass"]
    result = res.results[0]
    assert result["collection"]["findings"] == []
    assert (result["collection"]["bytes"], result["collection"]["files"]) == (collected, limits.max_files)
    for name in (
        "rollout.json",
        "scenario.json",
        "runtime.json",
        "harness.log",
        "native/.probe-reference/log.jsonl",
        "markers.json",
    ):
        assert (tmp_path / "out" / "reference" / "tool_success" / name).is_file(), name
    # Every marker counted, and read (in place: the audit writes them as one file).
    read = read_markers(tmp_path / "out" / "reference" / "tool_success" / "markers.json")
    assert sorted(read) == [m.name for m in markers]
    # One byte or one file less and the run's evidence no longer fits, as it would not have in the run.
    res = audit(src, tmp_path / "out2", limits=CollectLimits(max_bytes=collected - 1, max_files=limits.max_files))
    assert [f["kind"] for f in res.results[0]["collection"]["findings"]] == ["over_cap_file"]
    res = audit(src, tmp_path / "out3", limits=CollectLimits(max_bytes=collected, max_files=limits.max_files - 1))
    assert [f["kind"] for f in res.results[0]["collection"]["findings"]] == ["file_cap"]


def test_a_rollout_past_the_reader_s_cap_is_not_copied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = _layout(tmp_path, "tool_success")
    size = (src / "reference" / "tool_success" / "rollout.json").stat().st_size
    monkeypatch.setattr(audit_copy, "MAX_FILE_BYTES", size - 1)
    res = audit(src, tmp_path / "out")
    result = res.results[0]
    assert [(f["kind"], f["path"]) for f in result["collection"]["findings"]] == [("over_cap_file", "rollout.json")]
    assert "rollout" in result["inputs_unavailable"] and result["verdict"] == "fail"
    assert not (tmp_path / "out" / "reference" / "tool_success" / "rollout.json").exists()


def test_a_witness_past_the_reader_s_usual_cap_is_read_under_a_higher_collection_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A run given --collect-max-bytes above the reader's 256 MiB collects a witness that large: what it collected it
    # reads, and so does its audit given the same cap (the usual cap stands for everyone else).
    src = _layout(tmp_path, "tool_success")
    size = (src / "reference" / "tool_success" / "witness.jsonl").stat().st_size
    monkeypatch.setattr(verdict_mod, "MAX_FILE_BYTES", size - 1)  # the reader's usual cap, just under this witness
    raised = audit(src, tmp_path / "raised", limits=CollectLimits(max_bytes=size * 10)).results[0]
    assert raised["inputs_unavailable"] == {} and raised["verdict"] == "pass"
    usual = verdict_mod.collect_evidence(
        {}, RunPaths(tmp_path / "raised").episode("reference", "tool_success"), {}, None, 0
    )
    assert usual.witness is None and "more than the" in usual.errors["witness"]


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


def test_an_audited_page_links_its_result_and_an_episode_it_could_not_judge_has_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = _layout(tmp_path, "tool_success", "retry_429")
    real_judge = audit_mod.judge

    def judge_or_raise(result: dict[str, Any], scenario: dict[str, Any], ev: Any) -> None:
        if result["scenario"] == "retry_429":
            raise RuntimeError("a judge that breaks")
        real_judge(result, scenario, ev)

    monkeypatch.setattr(audit_mod, "judge", judge_or_raise)
    res = audit(src, tmp_path / "out")
    assert {r["scenario"]: r["verdict"] for r in res.results} == {"retry_429": "error", "tool_success": "pass"}
    for name in ("tool_success", "retry_429"):
        page = (tmp_path / "out" / "reference" / name / "episode.html").read_text()
        assert 'href="scenario_result.json"' in page
    assert "badge error" in (tmp_path / "out" / "reference" / "retry_429" / "episode.html").read_text()


def test_a_saved_run_whose_normalizing_failed_is_audited_with_the_run_s_reason(tmp_path: Path) -> None:
    first = audit(_layout(tmp_path, "tool_success"), tmp_path / "first")
    assert first.exit_code == 0
    saved = tmp_path / "again" / "reference" / "tool_success"
    shutil.copytree(tmp_path / "first" / "reference" / "tool_success", saved)
    # As a run saves an episode whose normalizer failed: no rollout.json, the failure in the result.
    (saved / "rollout.json").unlink()
    why = "normalized rollout refused: result.json: not JSON at line 1"
    result = json.loads((saved / "scenario_result.json").read_text())
    result["normalize"] = {"status": "error", "message": why}
    (saved / "scenario_result.json").write_text(json.dumps(result))
    res = audit(tmp_path / "again", tmp_path / "out")
    reasons = [x for c in res.results[0]["checks"] if c["status"] == "fail" for x in c["reasons"]]
    assert any(why in x for x in reasons)
    assert not any("does not exist" in x for x in reasons)


def test_a_rollout_of_too_many_values_is_a_fail_naming_the_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from orchestrator.evidence import jsonread

    monkeypatch.setattr(jsonread, "MAX_VALUES", 50)  # the fixture's rollout holds more; its witness lines fewer
    res = audit(_layout(tmp_path, "tool_success"), tmp_path / "out")
    monkeypatch.undo()  # the results are read back from disk, by the same reader
    assert res.exit_code == 1 and res.results[0]["verdict"] == "fail"
    reasons = [x for c in res.results[0]["checks"] if c["status"] == "fail" for x in c["reasons"]]
    assert any("rollout.json: holds up to" in x and "more than 50" in x for x in reasons), reasons[:3]

"""The Stirrup normalizer on run records captured from real runs, and on absent, corrupt and foreign copies."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from orchestrator.evidence import faults
from orchestrator.harnesses import NormalizeError, get_harness
from orchestrator.paths import EpisodePaths
from tests.unit.harnesses import captured

HARNESS = "stirrup"
CAPTURED = captured.captured(HARNESS)
ALWAYS = {
    "model_calls.failed_attempts_unrecorded": ["E1", "E7"],
    "model_calls.wall_clock_unrecorded": ["E1", "E3"],
    "model_calls.response_id_unrecorded": None,
    "model_calls.finish_reason_unrecorded": ["E1"],
    "model_calls.status_code_implied": None,
    "tokens.cached_unrecorded": ["E2"],
    "tool_calls.exit_code_in_text": None,
}


def materialize(name: str, dest: Path) -> EpisodePaths:
    return captured.materialize(HARNESS, name, dest)


def normalize(native: Path) -> dict[str, Any]:
    return get_harness(HARNESS).normalize(native)


def record_path(paths: EpisodePaths) -> Path:
    return paths.native / ".stirrup-probe" / "run.json"


@pytest.mark.parametrize("name", CAPTURED)
def test_captured_episode_gets_the_verdicts_of_its_real_run(tmp_path: Path, name: str) -> None:
    captured.assert_replays_its_real_run(HARNESS, name, tmp_path / name)


def test_tool_records_carry_the_exit_code_stirrup_wrote_and_the_output_the_model_saw(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    rollout = normalize(paths.native)
    events = captured.witness(paths)
    sent = [e for e in events if e["event"] == "tool_call"]
    seen = {e["tool_call_id"]: e["output"] for e in events if e["event"] == "tool_result_seen"}
    assert [(t["tool_call_id"], t["tool_name"]) for t in rollout["tool_calls"]] == [
        (e["tool_call_id"], "code_exec") for e in sent
    ]
    assert [(t["status"], t["exit_code"], t["step_no"]) for t in rollout["tool_calls"]] == [
        ("failed", 7, 1),
        ("succeeded", 0, 2),
    ]
    for t in rollout["tool_calls"]:
        assert t["output"] == seen[t["tool_call_id"]] and t["output"].startswith("<shell_results>")
        assert t["arguments"] == next(e["arguments"] for e in sent if e["tool_call_id"] == t["tool_call_id"])
    # The finish call is the outcome, not an executed tool; it stays in the model-visible history.
    assert rollout["outcome"] == {
        "final_answer": "PROBE_DONE",
        "status": "completed",
        "failure_kind": None,
        "failure_reason": None,
    }
    (inv,) = rollout["invocations"]
    finish = [c for m in inv["conversation"] if m["role"] == "assistant" for c in m["tool_calls"]][-1]
    assert (finish["tool_name"], finish["arguments"]) == ("finish", {"reason": "PROBE_DONE", "paths": []})
    assert captured.gap_codes(rollout) == ALWAYS


def test_token_counts_are_stirrups_and_omitted_usage_is_recorded_as_zero(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    sent = [e["usage"] for e in captured.witness(paths) if e["event"] == "attempt" and e["kind"] == "model"]
    stats = [c["token_stats"] for c in normalize(paths.native)["model_calls"]]
    assert stats == [{**u, "cached": None} for u in sent]
    # Stirrup turns a reply without usage into TokenUsage() (zeros): the rollout keeps what it recorded.
    omitted = normalize(materialize("usage_omitted", tmp_path / "omitted").native)["model_calls"]
    assert {c["token_stats"]["prompt"] for c in omitted} == {0}


def test_a_run_that_raised_keeps_the_error_that_escaped_and_names_the_lost_history(tmp_path: Path) -> None:
    paths = materialize("model_error", tmp_path / "ep")
    rollout = normalize(paths.native)
    assert rollout["outcome"]["status"] == "error"
    assert rollout["outcome"]["failure_kind"] == "openai.BadRequestError"
    assert "scripted invalid request" in rollout["outcome"]["failure_reason"]
    (call,) = rollout["model_calls"]
    assert (call["status_code"], call["error_category"]) == (400, "http_400")
    assert rollout["steps"] == [] and rollout["tool_calls"] == []
    assert "history.not_returned" in captured.gap_codes(rollout)


def test_absent_corrupt_and_foreign_records_are_normalize_errors(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    record = record_path(paths)
    original = record.read_bytes()
    record.write_bytes(original[: len(original) // 2])
    with pytest.raises(NormalizeError, match="not JSON"):
        normalize(paths.native)
    record.write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(NormalizeError, match="not a Stirrup run record"):
        normalize(paths.native)
    record.write_text(json.dumps({"format": "probe-stirrup-run/v1", "returned": None, "raised": None}))
    with pytest.raises(NormalizeError, match="neither"):
        normalize(paths.native)
    record.unlink()
    with pytest.raises(NormalizeError, match="no run record"):
        normalize(paths.native)


def test_hostile_history_entries_are_skipped_not_fatal(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    record = record_path(paths)
    data = json.loads(record.read_text())
    history = data["returned"]["history"]
    history[0][2:2] = [None, 7, {"role": "assistant", "blocks": "x", "token_usage": {"input": -1}}, {"role": "tool"}]
    history.append("not a group")
    record.write_text(json.dumps(data))
    rollout = normalize(paths.native)
    assert faults(rollout, "probe-rollout/v1") == []
    assert rollout["model_calls"][0]["token_stats"]["prompt"] is None

"""The NOOA normalizer on native logs captured from real runs, and on absent, corrupt and hostile copies."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from orchestrator.evidence import faults
from orchestrator.harnesses import NormalizeError, get_harness
from orchestrator.paths import EpisodePaths
from tests.unit.harnesses import captured

HARNESS = "nooa"
CAPTURED = captured.captured(HARNESS)
ALWAYS = {
    "model_calls.sdk_retries_unrecorded": ["E1", "E7"],
    "model_calls.response_id_unrecorded": None,
    "model_calls.status_code_implied": None,
    "steps.turns_unrecorded": ["E3"],
    "tool_calls.exit_code_in_text": None,
    "tool_calls.prefill_excluded": None,
    "outcome.answer_is_command_to_verify": None,
}


def materialize(name: str, dest: Path) -> EpisodePaths:
    return captured.materialize(HARNESS, name, dest)


def normalize(native: Path) -> dict[str, Any]:
    return get_harness(HARNESS).normalize(native)


def agent_dir(paths: EpisodePaths) -> Path:
    return paths.native / "agent"


def test_the_captures_cover_success_failure_retry_and_a_killed_run() -> None:
    assert {"tool_failure", "model_error", "retry_429", "harness_deadline"} <= set(CAPTURED)


@pytest.mark.parametrize("name", CAPTURED)
def test_captured_episode_gets_the_verdicts_of_its_real_run(tmp_path: Path, name: str) -> None:
    captured.assert_replays_its_real_run(HARNESS, name, tmp_path / name)


def test_tool_records_carry_the_exit_code_the_cell_printed_and_its_output(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    rollout = normalize(paths.native)
    events = captured.witness(paths)
    sent = [e for e in events if e["event"] == "tool_call"]
    assert [(t["tool_call_id"], t["tool_name"]) for t in rollout["tool_calls"]] == [
        (e["tool_call_id"], "execute_python") for e in sent
    ]
    assert [(t["status"], t["exit_code"], t["step_no"]) for t in rollout["tool_calls"]] == [
        ("failed", 7, 1),
        ("succeeded", 0, 2),
    ]
    for t, e in zip(rollout["tool_calls"], sent, strict=True):
        assert t["arguments"] == e["arguments"]
        assert t["output"].startswith("BashOutput(stdout=") and e["token"] in t["output"]
    # return_result is the outcome, not an executed tool; NOOA's own prefill cell is no tool record either.
    assert rollout["outcome"] == {
        "final_answer": "PROBE_DONE",
        "status": "completed",
        "failure_kind": None,
        "failure_reason": None,
    }
    (inv,) = rollout["invocations"]
    asked = [c for m in inv["conversation"] if m["role"] == "assistant" for c in m["tool_calls"]]
    assert asked[0]["tool_call_id"].startswith("prefill_") and asked[-1]["tool_name"] == "return_result"
    assert captured.gap_codes(rollout) == ALWAYS
    assert rollout["harness"] == {"name": "nooa", "version": "0.0.10"}
    assert rollout["extensions"]["nooa"]["answer_file"] == "PROBE_DONE"


def test_calls_carry_the_spans_times_and_the_scripted_token_counts(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    rollout = normalize(paths.native)
    sent = [e for e in captured.witness(paths) if e["event"] == "attempt" and e["kind"] == "model"]
    assert [c["token_stats"] for c in rollout["model_calls"]] == [e["usage"] for e in sent]
    assert [c["finish_reason"] for c in rollout["model_calls"]] == [e["finish_reason"] for e in sent]
    for call, attempt in zip(rollout["model_calls"], sent, strict=True):
        # The span opens before the request leaves and closes after the reply arrived.
        assert call["started_at"] <= attempt["started_at"] and call["completed_at"] >= attempt["completed_at"]


def test_a_run_of_failed_calls_keeps_each_status_and_the_error_it_ended_with(tmp_path: Path) -> None:
    rollout = normalize(materialize("model_error", tmp_path / "ep").native)
    calls = rollout["model_calls"]
    assert len(calls) == 10 and {(c["status_code"], c["error_category"]) for c in calls} == {(400, "http_400")}
    assert all("scripted invalid request" in c["error"] for c in calls)
    # No reply ended them: the failed calls form one step.
    assert [s["model_call_refs"] for s in rollout["steps"]] == [[c["model_call_id"] for c in calls]]
    assert rollout["outcome"]["status"] == "error" and "after 10 retries" in rollout["outcome"]["failure_reason"]


def test_a_429_the_sdk_retried_inside_one_call_leaves_no_call(tmp_path: Path) -> None:
    paths = materialize("retry_429", tmp_path / "ep")
    rollout = normalize(paths.native)
    failed = [e for e in captured.witness(paths) if e["event"] == "attempt" and e["status"] == 429]
    assert len(failed) == 2
    assert [c["status_code"] for c in rollout["model_calls"]] == [200, 200, 200]


def test_a_killed_run_has_no_calls_no_outcome_and_says_so(tmp_path: Path) -> None:
    rollout = normalize(materialize("harness_deadline", tmp_path / "ep").native)
    assert rollout["model_calls"] == [] and rollout["tool_calls"] == []
    assert rollout["outcome"]["status"] == "unknown"
    gaps = captured.gap_codes(rollout)
    assert {"model_calls.unrecorded", "tool_calls.trajectory_unwritten", "outcome.result_unwritten"} <= set(gaps)


def test_absent_logs_are_a_normalize_error_and_corrupt_files_are_named_gaps(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    agent = agent_dir(paths)
    (agent / "trajectory.json").write_text("[{")
    (agent / "result.json").write_text(json.dumps({"success": "yes"}))
    trace = next((agent / "traces").glob("*.jsonl"))
    trace.write_bytes(b"not json\n" + trace.read_bytes())
    rollout = normalize(paths.native)
    assert faults(rollout, "probe-rollout/v1") == []
    gaps = captured.gap_codes(rollout)
    assert {"tool_calls.trajectory_unwritten", "outcome.result_unwritten", "spans.unreadable_lines"} <= set(gaps)
    assert rollout["tool_calls"] == [] and rollout["outcome"]["status"] == "unknown"
    assert len(rollout["model_calls"]) == 3
    for p in sorted(agent.rglob("*"), reverse=True):
        p.rmdir() if p.is_dir() else p.unlink()
    with pytest.raises(NormalizeError, match="none of"):
        normalize(paths.native)


def test_hostile_spans_and_events_are_skipped_not_fatal(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    agent = agent_dir(paths)
    hostile = [
        {"resourceSpans": "x"},
        {"resourceSpans": [{"scopeSpans": [{"spans": [7, {"name": "acompletion", "attributes": "x"}]}]}]},
        {"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "acompletion", "startTimeUnixNano": "9" * 40}]}]}]},
        [1, 2],
    ]
    with (agent / "traces" / "zz.jsonl").open("w") as f:
        f.writelines(json.dumps(h) + "\n" for h in hostile)
    events = json.loads((agent / "trajectory.json").read_text())
    events[1:1] = [None, {"event_type": "ToolCallEvent", "metadata": "x", "result": 3}, {"event_type": "PythonOutput"}]
    (agent / "trajectory.json").write_text(json.dumps(events))
    rollout = normalize(paths.native)
    assert faults(rollout, "probe-rollout/v1") == []
    assert len(rollout["model_calls"]) == 5

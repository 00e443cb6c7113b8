"""The Codex normalizer on native files captured from real runs, and on truncated and corrupt copies of them."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from orchestrator.checks import Status, run_checks, scope_of
from orchestrator.evidence import faults
from orchestrator.harnesses import NormalizeError, get_harness
from orchestrator.paths import EpisodePaths
from orchestrator.verdict import collect_evidence, normalize_native
from tests.unit.harnesses import captured

HARNESS = "codex"
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "native" / "codex"
CAPTURED = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())
# Captured with their witness and the verdicts of the real run.
JUDGED = sorted(p.parent.name for p in FIXTURES.glob("*/checks.json"))
ALWAYS = {
    "model_calls.failed_attempts_unrecorded": ["E1", "E7"],
    "model_calls.started_at_unrecorded": None,
    "model_calls.status_code_implied": None,
}


def materialize(name: str, dest: Path) -> EpisodePaths:
    return captured.materialize(HARNESS, name, dest)


def normalize(native: Path) -> dict[str, Any]:
    return get_harness("codex").normalize(native)


def rollout_file(paths: EpisodePaths) -> Path:
    return next(paths.native.glob("sessions/*/*/*/rollout-*.jsonl"))


def events_file(paths: EpisodePaths) -> Path:
    return paths.native / ".codex-probe" / "events.jsonl"


witness = captured.witness


gap_codes = captured.gap_codes


def calls_of(rollout: dict[str, Any]) -> list[tuple[Any, ...]]:  # (status, category, has a response id)
    return [(c["status_code"], c["error_category"], c["response_id"] is not None) for c in rollout["model_calls"]]


def refs_per_step(rollout: dict[str, Any]) -> list[int]:
    return [len(s["model_call_refs"]) for s in rollout["steps"]]


@pytest.mark.parametrize("name", CAPTURED)
def test_every_captured_episode_normalizes_to_a_valid_rollout(tmp_path: Path, name: str) -> None:
    paths = materialize(name, tmp_path / name)
    rollout, record = normalize_native(get_harness("codex"), paths.native)
    assert record == {"status": "ok", "message": None}
    assert rollout is not None
    assert [str(f) for f in faults(rollout, "probe-rollout/v1")] == []
    assert rollout["harness"] == {"name": "codex", "version": "0.169.0"}
    (inv,) = rollout["invocations"]
    assert inv["invocation_id"] == rollout["rollout_id"] and inv["parent_invocation_id"] is None
    assert {k: v for k, v in gap_codes(rollout).items() if k in ALWAYS} == ALWAYS


@pytest.mark.parametrize("name", JUDGED)
def test_captured_episode_gets_the_verdicts_of_its_real_run(tmp_path: Path, name: str) -> None:
    captured.assert_replays_its_real_run(HARNESS, name, tmp_path / name)


def test_tool_records_carry_exit_codes_outputs_and_arguments_as_the_model_saw_them(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    rollout = normalize(paths.native)
    events = witness(paths)
    sent = {e["tool_call_id"]: e for e in events if e["event"] == "tool_call"}
    seen = {e["tool_call_id"]: e["output"] for e in events if e["event"] == "tool_result_seen"}
    assert [(t["status"], t["exit_code"], t["step_no"]) for t in rollout["tool_calls"]] == [
        ("failed", 7, 1),
        ("succeeded", 0, 2),
    ]
    for t in rollout["tool_calls"]:
        assert t["tool_name"] == sent[t["tool_call_id"]]["name"] == "exec_command"
        assert t["arguments"] == sent[t["tool_call_id"]]["arguments"]
        assert t["output"] == seen[t["tool_call_id"]]
        assert "Process exited with code" in t["output"]
    assert rollout["outcome"] == {
        "final_answer": "PROBE_DONE",
        "status": "completed",
        "failure_kind": None,
        "failure_reason": None,
    }


def test_replies_are_joined_by_the_response_ids_of_their_usage_records(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    rollout = normalize(paths.native)
    sent = [e for e in witness(paths) if e["event"] == "attempt"]
    calls = rollout["model_calls"]
    assert [c["response_id"] for c in calls] == [a["response_id"] for a in sent]
    assert [c["token_stats"] for c in calls] == [a["usage"] for a in sent]
    assert {(c["status_code"], c["finish_reason"], c["protocol"]) for c in calls} == {(200, "completed", "responses")}
    assert all(c["started_at"] is None and c["completed_at"].endswith("Z") for c in calls)


def test_parallel_calls_belong_to_the_step_of_the_reply_that_asked_for_both(tmp_path: Path) -> None:
    rollout = normalize(materialize("parallel_tools", tmp_path / "ep").native)
    assert refs_per_step(rollout) == [1, 1]
    assert [t["step_no"] for t in rollout["tool_calls"]] == [1, 1]
    (inv,) = rollout["invocations"]
    roles = [m["role"] for m in inv["conversation"]]
    # Base instructions, the developer message, environment context and task, then the replies and results.
    assert roles == ["system", "system", "user", "user", "assistant", "tool", "tool", "assistant"]
    assert [len(m["tool_calls"]) for m in inv["conversation"] if m["role"] == "assistant"] == [2, 0]
    assert inv["conversation"][-1]["content"] == "PROBE_DONE"


def test_stream_layer_retries_come_from_the_stdout_events(tmp_path: Path) -> None:
    paths = materialize("retry_429", tmp_path / "ep")
    rollout = normalize(paths.native)
    assert calls_of(rollout) == [(429, "http_429", False), (429, "http_429", False)] + [(200, None, True)] * 3
    assert refs_per_step(rollout) == [3, 1, 1]
    first = rollout["model_calls"][0]
    # Codex keeps its own sentence, not the error body the provider sent.
    assert first["error"].startswith("Reconnecting... 1/5") and "scripted rate limit" not in first["error"]
    assert (first["started_at"], first["completed_at"]) == (None, None)


def test_a_cut_stream_is_an_interrupted_attempt_of_the_first_step(tmp_path: Path) -> None:
    rollout = normalize(materialize("stream_cut", tmp_path / "ep").native)
    assert calls_of(rollout) == [(None, "stream_cut", False)] + [(200, None, True)] * 3
    assert refs_per_step(rollout) == [2, 1, 1]


def test_request_layer_retries_leave_no_trace(tmp_path: Path) -> None:
    rollout = normalize(materialize("retry_500", tmp_path / "ep").native)
    # The 500 was retried by Codex's HTTP layer: neither the rollout nor stdout says so.
    assert calls_of(rollout) == [(200, None, True)] * 3
    assert gap_codes(rollout)["model_calls.failed_attempts_unrecorded"] == ["E1", "E7"]


def test_a_reply_without_usage_loses_its_response_id(tmp_path: Path) -> None:
    rollout = normalize(materialize("usage_omitted", tmp_path / "ep").native)
    assert calls_of(rollout) == [(200, None, False)] * 3
    assert all(set(c["token_stats"].values()) == {None} for c in rollout["model_calls"])
    assert all(c["finish_reason"] is None for c in rollout["model_calls"])
    assert gap_codes(rollout)["model_calls.response_id_unrecorded"] == ["E1"]
    assert [t["step_no"] for t in rollout["tool_calls"]] == [1, 2]


def test_the_terminal_error_comes_from_task_complete(tmp_path: Path) -> None:
    rollout = normalize(materialize("model_error", tmp_path / "ep").native)
    (call,) = rollout["model_calls"]
    # Codex keeps the error body but names no HTTP status ("other").
    assert (call["status_code"], call["error_category"], call["response_id"]) == (None, "other", None)
    assert "scripted invalid request" in call["error"]
    assert call["completed_at"].endswith("Z")
    assert refs_per_step(rollout) == [1]
    out = rollout["outcome"]
    assert (out["status"], out["final_answer"], out["failure_kind"]) == ("error", None, "other")
    assert "scripted invalid request" in out["failure_reason"]


def test_without_the_stdout_events_the_stream_retries_are_a_gap(tmp_path: Path) -> None:
    paths = materialize("retry_429", tmp_path / "ep")
    events_file(paths).unlink()
    rollout = normalize(paths.native)
    assert calls_of(rollout) == [(200, None, True)] * 3
    assert gap_codes(rollout)["model_calls.stdout_events_missing"] == ["E1", "E7"]


def test_a_corrupt_stdout_event_is_skipped_and_named(tmp_path: Path) -> None:
    paths = materialize("retry_429", tmp_path / "ep")
    lines = events_file(paths).read_bytes().split(b"\n")
    retry = next(i for i, ln in enumerate(lines) if b"Reconnecting... 1/5" in ln)
    lines[retry] = lines[retry][:25]
    events_file(paths).write_bytes(b"\n".join(lines))
    rollout = normalize(paths.native)
    assert calls_of(rollout)[:2] == [(429, "http_429", False), (200, None, True)]
    assert "events.corrupt_line" in gap_codes(rollout)


def test_a_rollout_cut_mid_line_keeps_what_was_written(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    path = rollout_file(paths)
    raw = path.read_bytes()
    cut = raw.index(b'"type":"task_complete"')
    path.write_bytes(raw[:cut])
    rollout = normalize(paths.native)
    assert "rollout.truncated" in gap_codes(rollout)
    assert rollout["outcome"]["status"] == "unknown"
    assert len(rollout["tool_calls"]) == 2 and len(rollout["model_calls"]) == 3


def test_a_corrupt_line_in_the_middle_is_skipped_and_named(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    path = rollout_file(paths)
    lines = path.read_bytes().split(b"\n")
    usage = next(i for i, ln in enumerate(lines) if b'"type":"token_usage_record"' in ln)
    lines[usage] = b"\x00\xff not json"
    path.write_bytes(b"\n".join(lines))
    rollout = normalize(paths.native)
    assert "rollout.corrupt_line" in gap_codes(rollout)
    assert [c["response_id"] is None for c in rollout["model_calls"]] == [True, False, False]


@pytest.mark.parametrize(
    ("mangle", "message"),
    [
        (lambda b: b[:200], "no readable rollout record"),
        (lambda b: b"", "no readable rollout record"),
        (lambda b: b"garbage\n" * 50, "no readable rollout record"),
        (lambda b: b.split(b"\n", 1)[1], "no readable session_meta"),
        (lambda b: b'{"timestamp": "x", "type": "event_msg", "payload": {"type": "task_started"}}\n', "session_meta"),
    ],
    ids=["truncated_in_session_meta", "empty", "garbage", "session_meta_lost", "foreign_jsonl"],
)
def test_an_unusable_rollout_is_a_clear_error(tmp_path: Path, mangle: Any, message: str) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    rollout_file(paths).write_bytes(mangle(rollout_file(paths).read_bytes()))
    rollout, record = normalize_native(get_harness("codex"), paths.native)
    assert rollout is None and record["status"] == "error"
    assert not record["message"].startswith("normalizer crashed"), record["message"]
    with pytest.raises(NormalizeError, match=message):
        normalize(paths.native)


def test_no_rollout_at_all(tmp_path: Path) -> None:
    with pytest.raises(NormalizeError, match="Codex wrote no rollout"):
        normalize(tmp_path)


@pytest.mark.parametrize("junk", [None, [], "text", 7, {"type": 5}, {"item": "x", "type": "item_completed"}])
def test_records_of_the_wrong_shape_never_crash_the_normalizer(tmp_path: Path, junk: Any) -> None:
    paths = materialize("retry_429", tmp_path / "ep")
    path = rollout_file(paths)
    out = []
    for n, line in enumerate(path.read_text().splitlines()):
        record = json.loads(line)
        if n and record["type"] != "session_meta":
            record["payload"] = {**record["payload"], **junk} if isinstance(junk, dict) else junk
        out.append(json.dumps(record))
    path.write_text("\n".join(out) + "\n")
    events_file(paths).write_text('{"type": "error", "message": 5}\n{"type": "item.completed", "item": []}\n')
    rollout, record = normalize_native(get_harness("codex"), paths.native)
    assert record["status"] == "ok", record["message"]
    assert rollout is not None and [str(f) for f in faults(rollout, "probe-rollout/v1")] == []


def test_a_second_rollout_file_is_named_not_read(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    path = rollout_file(paths)
    shutil.copyfile(path, path.with_name("rollout-9999-zz.jsonl"))
    rollout = normalize(paths.native)
    assert gap_codes(rollout)["invocations.unread_rollouts"] == ["E8"]
    assert len(rollout["invocations"]) == 1  # sub-agent threads are not read


def test_normalizing_leaves_the_native_files_untouched(tmp_path: Path) -> None:
    paths = materialize("retry_429", tmp_path / "ep")
    files = [p for p in sorted(paths.native.rglob("*")) if p.is_file()]
    before = [hashlib.sha256(p.read_bytes()).hexdigest() for p in files]
    normalize(paths.native)
    assert [hashlib.sha256(p.read_bytes()).hexdigest() for p in files] == before


def test_checks_see_what_codex_dropped(tmp_path: Path) -> None:
    paths = materialize("retry_429", tmp_path / "ep")
    rollout = normalize(paths.native)
    scenario = json.loads(paths.scenario.read_text())
    results = {r.id: r for r in run_checks(collect_evidence(scenario, paths, rollout, None), scope_of(scenario))}
    for joined in ("attempts.multiset", "tokens.match"):
        assert results[joined].status == Status.PASS, joined
    # Where the normalizer placed the retries agrees with the wire, but Codex never said: not credited.
    assert results["steps.witness_attempts"].status == Status.NOT_APPLICABLE
    assert results["steps.witness_attempts"].reasons[0].startswith("gap steps.retry_placement_inferred")
    assert results["errors.payload_retained"].status == Status.FAIL
    assert "lacks the message 'scripted rate limit'" in results["errors.payload_retained"].reasons[0]

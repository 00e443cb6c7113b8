"""The Qwen Code normalizer on chat recordings captured from real runs, on edited copies that make exactly the check
of each fact it reads fail, and on truncated, corrupt and missing recordings."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from orchestrator.checks import Status
from orchestrator.harnesses import NormalizeError, get_harness
from orchestrator.paths import EpisodePaths
from tests.unit.harnesses import captured

HARNESS = "qwen-code"
CAPTURED = captured.captured(HARNESS)
SDK_RETRIES = "model_calls.failed_attempts_unrecorded"

witness = captured.witness
gap_codes = captured.gap_codes


def materialize(name: str, dest: Path) -> EpisodePaths:
    return captured.materialize(HARNESS, name, dest)


def normalize(native: Path) -> dict[str, Any]:
    return get_harness(HARNESS).normalize(native)


def recording(paths: EpisodePaths) -> Path:
    (path,) = (paths.native / ".qwen" / "projects").glob("*/chats/*.jsonl")
    return path


def stream(paths: EpisodePaths) -> Path:
    return paths.native / ".qwen-probe" / "events.jsonl"


def edit_lines(path: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for r in records:
        edit(r)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def ui_event(r: dict[str, Any], name: str) -> dict[str, Any] | None:
    if r.get("subtype") != "ui_telemetry":
        return None
    event: dict[str, Any] = r["systemPayload"]["uiEvent"]
    return event if event["event.name"] == f"qwen-code.{name}" else None


def failing(paths: EpisodePaths) -> set[str]:
    results = captured.replay(paths, normalize(paths.native))
    return {k for k, r in results.items() if r.status == Status.FAIL and r.kind != "process"}


@pytest.mark.parametrize("name", CAPTURED)
def test_captured_episode_gets_the_verdicts_of_its_real_run(tmp_path: Path, name: str) -> None:
    captured.assert_replays_its_real_run(HARNESS, name, tmp_path / name)


def test_replies_keep_the_ids_times_and_counts_qwen_logged_and_the_turns_usage(tmp_path: Path) -> None:
    paths = materialize("parallel_tools", tmp_path / "ep")
    rollout = normalize(paths.native)
    sent = [e for e in witness(paths) if e["event"] == "attempt"]
    calls = rollout["model_calls"]
    assert [c["response_id"] for c in calls] == [a["response_id"] for a in sent]
    for c, a in zip(calls, sent, strict=True):
        assert c["token_stats"] == a["usage"]
        assert (c["protocol"], c["status_code"], c["finish_reason"]) == ("chat", 200, None)
        assert c["started_at"] < c["completed_at"]
    # One step per assistant record, holding the reply Qwen logged before it and the usage it recorded with it.
    assert [(s["step_no"], s["model_call_refs"]) for s in rollout["steps"]] == [
        (1, [calls[0]["model_call_id"]]),
        (2, [calls[1]["model_call_id"]]),
    ]
    assert [s["token_stats"] for s in rollout["steps"]] == [c["token_stats"] for c in calls]
    assert [t["step_no"] for t in rollout["tool_calls"]] == [1, 1]
    (inv,) = rollout["invocations"]
    assert inv["invocation_id"] == rollout["rollout_id"] == recording(paths).stem
    assert [m["role"] for m in inv["conversation"]] == ["user", "assistant", "tool", "tool", "assistant"]
    # The session totals of Qwen's stream-json `result` (no reasoning count there).
    prompts = sum(a["usage"]["prompt"] for a in sent)
    assert inv["token_totals"]["prompt"] == prompts and inv["token_totals"]["reasoning"] is None
    assert rollout["outcome"] == {
        "final_answer": "PROBE_DONE",
        "status": "completed",
        "failure_kind": None,
        "failure_reason": None,
    }
    assert gap_codes(rollout) == {"model_calls.finish_reason_unrecorded": ["E1"], SDK_RETRIES: ["E1", "E7"]}


def test_a_failed_command_keeps_the_exit_code_qwen_recorded_and_the_text_the_model_saw(tmp_path: Path) -> None:
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
        assert (t["tool_name"], t["arguments"]) == ("run_shell_command", sent[t["tool_call_id"]]["arguments"])
        assert t["output"] == seen[t["tool_call_id"]]
        assert t["output"].startswith("Command: ")  # the text Qwen fed back, not the command's bare stdout


def test_retries_inside_the_provider_sdk_leave_no_trace(tmp_path: Path) -> None:
    paths = materialize("retry_429", tmp_path / "ep")
    rollout = normalize(paths.native)
    statuses = [e["status"] for e in witness(paths) if e["event"] == "attempt" and e["kind"] == "model"]
    assert statuses == [429, 429, 200, 200, 200]
    assert [c["status_code"] for c in rollout["model_calls"]] == [200, 200, 200]
    assert gap_codes(rollout)[SDK_RETRIES] == ["E1", "E7"]
    assert "provenance" not in rollout


def test_retries_of_qwens_own_layer_are_attempts_of_their_step(tmp_path: Path) -> None:
    paths = materialize("retry_429_sdk_retries_0", tmp_path / "ep")
    rollout = normalize(paths.native)
    calls = rollout["model_calls"]
    assert [(c["status_code"], c["error_category"]) for c in calls] == [
        (429, "http_429"),
        (429, "http_429"),
        (200, None),
        (200, None),
        (200, None),
    ]
    assert calls[0]["error"] == "429 scripted rate limit" and calls[0]["response_id"] is None
    assert calls[0]["token_stats"] == dict.fromkeys(("prompt", "completion", "reasoning", "total", "cached"))
    assert [len(s["model_call_refs"]) for s in rollout["steps"]] == [3, 1, 1]
    assert rollout["provenance"] == {"retry_placement": "inferred"}
    assert SDK_RETRIES not in gap_codes(rollout)


def test_a_cut_stream_is_a_failed_attempt_without_status(tmp_path: Path) -> None:
    paths = materialize("stream_cut", tmp_path / "ep")
    rollout = normalize(paths.native)
    first = rollout["model_calls"][0]
    assert (first["status_code"], first["error_category"], first["response_id"]) == (None, "stream_cut", None)
    assert "other side closed" in first["error"]
    # The cut stream's id Qwen logged with the error is kept aside, never as a reply's id.
    cut = next(e for e in witness(paths) if e["event"] == "attempt" and e.get("ended") == "cut")
    assert rollout["extensions"]["qwen_code"]["failed_response_ids"] == [cut["response_id"]]
    assert [len(s["model_call_refs"]) for s in rollout["steps"]] == [2, 1, 1]


def test_a_stream_that_went_silent_is_a_timeout(tmp_path: Path) -> None:
    paths = materialize("harness_deadline", tmp_path / "ep")
    first = normalize(paths.native)["model_calls"][0]
    assert (first["status_code"], first["error_category"]) == (None, "timeout")
    assert first["error"].startswith("No stream activity for 20000ms")


def test_a_terminal_error_is_the_outcome_qwen_printed(tmp_path: Path) -> None:
    paths = materialize("model_error", tmp_path / "ep")
    rollout = normalize(paths.native)
    (call,) = rollout["model_calls"]
    assert (call["status_code"], call["error_category"], call["error"]) == (
        400,
        "http_400",
        "400 scripted invalid request",
    )
    assert rollout["outcome"] == {
        "final_answer": None,
        "status": "error",
        "failure_kind": "error_during_execution",
        "failure_reason": "[API Error: 400 scripted invalid request]",
    }
    assert [s["model_call_refs"] for s in rollout["steps"]] == [[call["model_call_id"]]]


def test_omitted_usage_is_logged_as_zero_while_the_turn_records_none(tmp_path: Path) -> None:
    paths = materialize("usage_omitted", tmp_path / "ep")
    rollout = normalize(paths.native)
    zeros = {"prompt": 0, "completion": 0, "reasoning": 0, "total": 0, "cached": 0}
    assert {json.dumps(c["token_stats"]) for c in rollout["model_calls"]} == {json.dumps(zeros)}
    assert {json.dumps(s["token_stats"]) for s in rollout["steps"]} == {json.dumps(dict.fromkeys(zeros))}


def test_a_compaction_that_failed_leaves_its_summary_call_in_no_step(tmp_path: Path) -> None:
    paths = materialize("context_compaction", tmp_path / "ep")
    rollout = normalize(paths.native)
    summary = next(e for e in witness(paths) if e["event"] == "attempt" and e["kind"] == "auxiliary")
    (call,) = [c for c in rollout["model_calls"] if c["response_id"] == summary["response_id"]]
    assert all(call["model_call_id"] not in s["model_call_refs"] for s in rollout["steps"])
    assert "compactions" not in rollout
    assert rollout["outcome"]["status"] == "error"
    assert "COMPRESSION_FAILED_INFLATED_TOKEN_COUNT" in rollout["outcome"]["failure_reason"]


@pytest.mark.parametrize(
    ("name", "protocol"), [("responses_tool_success", "responses"), ("messages_tool_success", "messages")]
)
def test_the_protocol_is_the_auth_type_qwen_logged_each_call_under(tmp_path: Path, name: str, protocol: str) -> None:
    paths = materialize(name, tmp_path / "ep")
    rollout = normalize(paths.native)
    assert {c["protocol"] for c in rollout["model_calls"]} == {protocol}
    sent = [e["tool_call_id"] for e in witness(paths) if e["event"] == "tool_call"]
    assert [t["tool_call_id"] for t in rollout["tool_calls"]] == sent


def test_messages_usage_is_anthropics_input_plus_cache_and_an_invented_zero_reasoning(tmp_path: Path) -> None:
    paths = materialize("messages_tool_success", tmp_path / "ep")
    first = normalize(paths.native)["model_calls"][0]
    wire = next(e for e in witness(paths) if e["event"] == "attempt" and e["kind"] == "model")["usage"]
    assert (first["token_stats"]["prompt"], first["token_stats"]["cached"]) == (wire["prompt"], wire["cached"])
    # Anthropic's reply carries no reasoning count; Qwen records 0 (tokens.match names it).
    assert (wire["reasoning"], first["token_stats"]["reasoning"]) == (None, 0)


# Negative controls: each fact read from Qwen's own records, edited in the native files, fails its check.
def _exit_code_zero(r: dict[str, Any]) -> None:
    if r.get("type") == "tool_result":
        r["toolCallResult"]["resultDisplay"]["exitCode"] = 0


def _output_edited(r: dict[str, Any]) -> None:
    if r.get("type") == "tool_result":
        response = r["message"]["parts"][0]["functionResponse"]["response"]
        key = "error" if "error" in response else "output"
        response[key] += "!"


def _prompt_tokens(r: dict[str, Any]) -> None:
    if event := ui_event(r, "api_response"):
        event["input_token_count"] += 1


def _response_id(r: dict[str, Any]) -> None:
    if event := ui_event(r, "api_response"):
        event["response_id"] = "chatcmpl-invented"


@pytest.mark.parametrize(
    ("edit", "check"),
    [
        (_exit_code_zero, "tools.witness_status"),
        (_output_edited, "tools.witness_output"),
        (_prompt_tokens, "tokens.match"),
        (_response_id, "attempts.multiset"),
    ],
    ids=["exit_code", "tool_output", "tokens", "response_id"],
)
def test_an_edited_recording_fails_the_check_of_what_was_edited(
    tmp_path: Path, edit: Callable[[dict[str, Any]], None], check: str
) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    assert check not in failing(paths)
    edit_lines(recording(paths), edit)
    assert check in failing(paths)


def _status_500(r: dict[str, Any]) -> None:
    if event := ui_event(r, "api_error"):
        event["status_code"] = 500


def _failure_protocol(r: dict[str, Any]) -> None:
    if event := ui_event(r, "api_error"):
        event["auth_type"] = "anthropic"


@pytest.mark.parametrize(
    ("edit", "check"),
    [(_status_500, "attempts.multiset"), (_failure_protocol, "attempts.exchange")],
    ids=["status", "protocol"],
)
def test_an_edited_failure_fails_the_check_of_what_was_edited(
    tmp_path: Path, edit: Callable[[dict[str, Any]], None], check: str
) -> None:
    # (A success's protocol is held to the wire by calls.response_metadata, which Qwen's missing finish reasons
    # block: a failed attempt's is held by attempts.exchange.)
    paths = materialize("retry_429_sdk_retries_0", tmp_path / "ep")
    assert check not in failing(paths)
    edit_lines(recording(paths), edit)
    assert check in failing(paths)


def test_the_printed_result_is_the_outcome_and_without_it_the_last_answer_recorded(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")

    def answer(e: dict[str, Any]) -> None:
        if e.get("type") == "result":
            e["result"] = "PROBE_DONE?"

    edit_lines(stream(paths), answer)
    assert "outcome.final_answer" in failing(paths)
    stream(paths).unlink()
    rollout = normalize(paths.native)
    assert rollout["outcome"]["final_answer"] == "PROBE_DONE"
    assert "native.stream_missing" in gap_codes(rollout)
    assert "token_totals" not in rollout["invocations"][0]


def test_normalizing_leaves_the_native_files_untouched(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")

    def digests() -> dict[str, str]:
        return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in paths.native.rglob("*") if p.is_file()}

    before = digests()
    normalize(paths.native)
    assert digests() == before


def test_no_recording_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(NormalizeError, match="Qwen Code wrote no chat recording"):
        normalize(tmp_path)
    paths = materialize("tool_failure", tmp_path / "ep")
    recording(paths).write_bytes(b"\x00\xff" * 64)
    with pytest.raises(NormalizeError, match="holds no readable record"):
        normalize(paths.native)


def test_a_recording_cut_inside_its_last_line_keeps_what_came_before(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    path = recording(paths)
    data = path.read_bytes()
    path.write_bytes(data[: data.rstrip(b"\n").rfind(b"\n") + 40] + b"\nnot json\n")
    rollout = normalize(paths.native)
    assert {"native.recording_corrupt_line", "native.recording_truncated"} & set(gap_codes(rollout))
    assert len(rollout["model_calls"]) == 3 and len(rollout["tool_calls"]) == 2


def test_of_several_recordings_the_one_the_stream_names_is_read(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    path = recording(paths)
    other = path.with_name("00000000-0000-0000-0000-000000000000.jsonl")
    other.write_text(json.dumps({"type": "user", "sessionId": "other", "message": {"parts": [{"text": "x"}]}}) + "\n")
    rollout = normalize(paths.native)
    assert rollout["rollout_id"] == path.stem
    assert "native.other_session_ignored" in gap_codes(rollout)
    stream(paths).unlink()
    with pytest.raises(NormalizeError, match="several chat recordings"):
        normalize(paths.native)

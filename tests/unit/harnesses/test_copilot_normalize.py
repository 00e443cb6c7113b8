"""The Copilot CLI normalizer on episodes captured from real runs, and on damaged and edited copies of them: each
edit of a harness-specific reading (the join of a reply to its usage record, a dispatch's turn, the shell's exit
code) makes the check that holds it fail."""

from __future__ import annotations

import json
import lzma
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from orchestrator.checks import CheckResult, Status
from orchestrator.harnesses import NormalizeError, get_harness
from orchestrator.paths import EpisodePaths
from orchestrator.verdict import normalize_native
from tests.unit.harnesses import captured

HARNESS = "copilot"
CAPTURED = captured.captured(HARNESS)
ALWAYS = {"model_calls.status_code_implied": None, "model_calls.total_tokens_unrecorded": ["E2"]}
witness = captured.witness
gap_codes = captured.gap_codes


def materialize(name: str, dest: Path) -> EpisodePaths:
    return captured.materialize(HARNESS, name, dest)


def normalize(native: Path) -> dict[str, Any]:
    return get_harness(HARNESS).normalize(native)


def events_file(paths: EpisodePaths) -> Path:
    (path,) = (paths.native / "session-state").glob("*/events.jsonl")
    return path


def stream_file(paths: EpisodePaths) -> Path:
    return paths.native / ".copilot-probe" / "stream.jsonl"


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def write_lines(path: Path, events: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(e) + "\n" for e in events))


def edit(path: Path, change: Callable[[list[dict[str, Any]]], None]) -> None:
    events = read_lines(path)
    change(events)
    write_lines(path, events)


def checks(paths: EpisodePaths) -> dict[str, CheckResult]:
    return captured.replay(paths, normalize(paths.native))


def attempts(paths: EpisodePaths) -> list[dict[str, Any]]:
    return [e for e in witness(paths) if e["event"] == "attempt" and e["kind"] == "model"]


# Killed while it waited, Copilot logged a dispatch and nothing after it: that call has no protocol and no end,
# which the rollout schema does not admit (its replay is below).
UNFINISHED = "harness_deadline"


@pytest.mark.parametrize("name", [n for n in CAPTURED if n != UNFINISHED])
def test_captured_episode_gets_the_verdicts_of_its_real_run(tmp_path: Path, name: str) -> None:
    captured.assert_replays_its_real_run(HARNESS, name, tmp_path / name)


def test_the_killed_episode_gets_the_verdicts_of_its_real_run(tmp_path: Path) -> None:
    paths = materialize(UNFINISHED, tmp_path / "ep")
    got = {k: str(v.status) for k, v in checks(paths).items() if v.kind != "process"}
    recorded = json.loads((paths.root / "checks.json").read_text())["checks"]
    # A check added after the capture applies to it not at all (as captured.assert_replays_its_real_run has it).
    assert {k: v for k, v in got.items() if k not in recorded} == dict.fromkeys(
        set(got) - set(recorded), "not_applicable"
    )
    assert {k: v for k, v in got.items() if k in recorded} == recorded
    assert got["calls.protocol"] == got["calls.timing"] == "fail"


def test_replies_keep_their_response_ids_counts_turns_and_times(tmp_path: Path) -> None:
    paths = materialize("parallel_tools", tmp_path / "ep")
    rollout = normalize(paths.native)
    sent = attempts(paths)
    calls = rollout["model_calls"]
    assert [c["response_id"] for c in calls] == [a["response_id"] for a in sent]
    assert [(c["protocol"], c["status_code"], c["finish_reason"]) for c in calls] == [
        ("chat", 200, "tool_calls"),
        ("chat", 200, "stop"),
    ]
    for c, a in zip(calls, sent, strict=True):
        # Every count as the reply carried it, but the total, which Copilot does not keep.
        assert c["token_stats"] == {**a["usage"], "total": None}
        assert c["started_at"] < a["started_at"] and c["completed_at"] > a["completed_at"]
    assert [(s["step_no"], len(s["model_call_refs"])) for s in rollout["steps"]] == [(1, 1), (2, 1)]
    assert [(t["step_no"], t["status"], t["exit_code"]) for t in rollout["tool_calls"]] == [(1, "succeeded", 0)] * 2
    (inv,) = rollout["invocations"]
    assert inv["invocation_id"] == rollout["rollout_id"] and inv["parent_invocation_id"] is None
    assert [m["role"] for m in inv["conversation"]] == ["user", "assistant", "tool", "tool", "assistant"]
    # The session's own totals (the usage file) are the sum of its replies.
    assert inv["token_totals"] == {"prompt": 210, "completion": 15, "reasoning": None, "total": None, "cached": 6}
    assert rollout["outcome"] == {
        "final_answer": "PROBE_DONE",
        "status": "completed",
        "failure_kind": None,
        "failure_reason": None,
    }
    assert rollout["provenance"] == {"retry_placement": "recorded"}
    assert gap_codes(rollout) == ALWAYS


def test_a_failed_command_is_failed_by_its_exit_code_although_copilot_calls_it_a_success(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    rollout = normalize(paths.native)
    seen = {e["tool_call_id"]: e["output"] for e in witness(paths) if e["event"] == "tool_result_seen"}
    assert [(t["status"], t["exit_code"]) for t in rollout["tool_calls"]] == [("failed", 7), ("succeeded", 0)]
    assert all(t["output"] == seen[t["tool_call_id"]] for t in rollout["tool_calls"])
    done = [e["data"] for e in read_lines(events_file(paths)) if e["type"] == "tool.execution_complete"]
    assert [d["success"] for d in done] == [True, True]  # Copilot's flag says the tool ran, not the command
    # Negative control: the exit code the shell logged is what the status rests on.
    edit(events_file(paths), lambda ev: _set_exit(ev, 0))
    result = checks(paths)["tools.witness_status"]
    assert result.status == Status.FAIL and "succeeded" in " ".join(result.reasons)


def _set_exit(events: list[dict[str, Any]], code: int) -> None:
    first = next(e for e in events if e["type"] == "tool.execution_complete")
    first["data"]["shellExecution"]["exitCode"] = code


def test_retries_are_failed_calls_of_the_turn_they_retried(tmp_path: Path) -> None:
    paths = materialize("retry_429", tmp_path / "ep")
    rollout = normalize(paths.native)
    calls = rollout["model_calls"]
    assert [(c["status_code"], c["error_category"], c["response_id"] is None) for c in calls] == [
        (429, "http_429", True),
        (429, "http_429", True),
        (200, None, False),
        (200, None, False),
        (200, None, False),
    ]
    assert json.loads(calls[0]["error"])["message"] == "scripted rate limit"
    assert set(calls[0]["token_stats"].values()) == {None}
    assert [len(s["model_call_refs"]) for s in rollout["steps"]] == [3, 1, 1]
    assert rollout["extensions"]["copilot"]["retry_reasons"] == ["rate_limit", "rate_limit"]
    for check in ("attempts.multiset", "errors.payload_retained", "steps.witness_attempts", "attempts.exchange"):
        assert checks(paths)[check].status == Status.PASS, check


def test_a_retry_moved_to_another_turn_is_caught(tmp_path: Path) -> None:
    paths = materialize("retry_429", tmp_path / "ep")

    def move(events: list[dict[str, Any]]) -> None:
        starts = [e for e in events if e["type"] == "model.call_start"]
        starts[1]["data"]["turnId"] = "1"  # the second 429 placed in the next turn

    edit(stream_file(paths), move)
    result = checks(paths)["steps.witness_attempts"]
    assert result.status == Status.FAIL, result.reasons


def test_a_cut_stream_is_a_transport_failure_without_a_status(tmp_path: Path) -> None:
    paths = materialize("stream_cut", tmp_path / "ep")
    rollout = normalize(paths.native)
    first = rollout["model_calls"][0]
    assert (first["status_code"], first["error_category"], first["response_id"]) == (None, "transport", None)
    assert "unexpected EOF" in first["error"]
    assert [len(s["model_call_refs"]) for s in rollout["steps"]] == [2, 1, 1]
    assert rollout["extensions"]["copilot"]["retry_reasons"] == ["streaming_error"]


def test_a_terminal_error_is_the_outcome(tmp_path: Path) -> None:
    paths = materialize("model_error", tmp_path / "ep")
    rollout = normalize(paths.native)
    (call,) = rollout["model_calls"]
    assert (call["status_code"], call["error_category"]) == (400, "http_400")
    assert rollout["outcome"] == {
        "final_answer": None,
        "status": "error",
        "failure_kind": "query",
        "failure_reason": "400 scripted invalid request",
    }
    assert rollout["extensions"]["copilot"]["exit_code"] == 1


def test_omitted_usage_keeps_the_zeros_copilot_wrote(tmp_path: Path) -> None:
    paths = materialize("usage_omitted", tmp_path / "ep")
    rollout = normalize(paths.native)
    for c in rollout["model_calls"]:
        # Copilot records unknown input and output as null but the cache reads as 0: kept as recorded.
        assert c["token_stats"] == {"prompt": None, "completion": None, "reasoning": None, "total": None, "cached": 0}
    result = checks(paths)["tokens.match"]
    assert result.status == Status.FAIL and any("cached is 0, the reply carried None" in r for r in result.reasons)


def test_a_run_killed_while_waiting_has_an_unfinished_call(tmp_path: Path) -> None:
    paths = materialize("harness_deadline", tmp_path / "ep")
    rollout = normalize(paths.native)
    (call,) = rollout["model_calls"]
    assert (call["started_at"] is not None, call["completed_at"], call["protocol"]) == (True, None, None)
    assert (call["status_code"], call["error_category"]) == (None, "unfinished")
    assert gap_codes(rollout)["model_calls.unfinished"] == ["E1"]
    assert rollout["outcome"]["status"] == "unknown"
    assert "native.usage_file_missing" in gap_codes(rollout)


def test_a_compaction_is_recorded_in_its_turn_without_its_calls(tmp_path: Path) -> None:
    paths = materialize("context_compaction", tmp_path / "ep")
    rollout = normalize(paths.native)
    (compaction,) = rollout["compactions"]
    assert compaction["model_call_refs"] == [] and compaction["step_no"] in {s["step_no"] for s in rollout["steps"]}
    assert gap_codes(rollout)["compactions.calls_unrecorded"] == ["E1"]
    summary = [a for a in witness(paths) if a["event"] == "attempt" and a["kind"] == "auxiliary"]
    assert len(summary) == 1 and all(c["response_id"] != summary[0]["response_id"] for c in rollout["model_calls"])


def test_a_reply_whose_usage_record_names_another_response_loses_its_counts(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")

    def rename(events: list[dict[str, Any]]) -> None:
        record = next(e for e in events if e["type"] == "session.usage_record")
        record["data"]["usage"]["apiCallId"] = "chatcmpl-invented"

    edit(events_file(paths), rename)
    rollout = normalize(paths.native)
    assert set(rollout["model_calls"][0]["token_stats"].values()) == {None}
    assert gap_codes(rollout)["model_calls.usage_unrecorded"] == ["E2"]
    assert checks(paths)["tokens.match"].status == Status.FAIL


def test_without_the_stream_only_the_persisted_replies_are_calls(tmp_path: Path) -> None:
    paths = materialize("retry_429", tmp_path / "ep")
    stream_file(paths).unlink()
    rollout = normalize(paths.native)
    assert [c["status_code"] for c in rollout["model_calls"]] == [200, 200, 200]
    assert all(c["started_at"] is None for c in rollout["model_calls"])
    codes = gap_codes(rollout)
    assert codes["model_calls.failed_attempts_unrecorded"] == ["E1", "E7"] and "native.stream_missing" in codes
    assert checks(paths)["attempts.multiset"].status == Status.FAIL


def test_the_stream_names_this_runs_session_among_several(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    mine = events_file(paths).parent
    other = mine.parent / "00000000-0000-4000-8000-000000000000"
    other.mkdir()
    (other / "events.jsonl").write_text(json.dumps({"type": "session.start", "data": {}}) + "\n")
    rollout = normalize(paths.native)
    assert rollout["rollout_id"] == mine.name
    assert "native.other_session_ignored" in gap_codes(rollout)
    stream_file(paths).unlink()
    with pytest.raises(NormalizeError, match="several session event logs"):
        normalize(paths.native)


def test_a_log_cut_inside_its_last_line_keeps_what_came_before(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    path = events_file(paths)
    data = path.read_bytes()
    path.write_bytes(data[: data.rstrip(b"\n").rfind(b"\n") + 40])  # session.shutdown, half written
    rollout = normalize(paths.native)
    assert "native.session_truncated" in gap_codes(rollout)
    assert rollout["outcome"]["final_answer"] == "PROBE_DONE"


@pytest.mark.parametrize(
    ("mangle", "message"),
    [
        (lambda b: b"", "holds no session.start"),
        (lambda b: b"\x00\xff" * 64, "holds no session.start"),
        (lambda b: b'[1]\n{"type": 7}\n' + b"[" * 100_000 + b"\n", "holds no session.start"),
    ],
    ids=["empty", "binary", "no_events"],
)
def test_a_session_log_without_its_start_is_a_clear_error(tmp_path: Path, mangle: Any, message: str) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    path = events_file(paths)
    path.write_bytes(mangle(path.read_bytes()))
    rollout, record = normalize_native(get_harness(HARNESS), paths.native)
    assert rollout is None and record["status"] == "error"
    assert not record["message"].startswith("normalizer crashed"), record["message"]
    with pytest.raises(NormalizeError, match=message):
        normalize(paths.native)


def test_no_session_log_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "session-state").mkdir()
    with pytest.raises(NormalizeError, match="Copilot wrote no session event log"):
        normalize(tmp_path)


def test_normalizing_leaves_the_native_files_untouched(tmp_path: Path) -> None:
    captured.assert_leaves_native_untouched(HARNESS, "retry_429", tmp_path / "ep")


def test_the_fixtures_hold_only_what_the_normalizer_reads() -> None:
    for name in CAPTURED:
        files = sorted(
            p.relative_to(captured.fixtures(HARNESS) / name / "native").as_posix()
            for p in (captured.fixtures(HARNESS) / name / "native").rglob("*")
            if p.is_file()
        )
        assert {Path(f).name for f in files} <= {"events.jsonl.xz", "stream.jsonl.xz", "usage.json"}, files
        assert lzma.decompress((captured.fixtures(HARNESS) / name / "witness.jsonl.xz").read_bytes())


def test_responses_finish_reasons_are_turned_back_into_the_wire_status(tmp_path: Path) -> None:
    paths = materialize("responses_tool_success", tmp_path / "ep")
    rollout = normalize(paths.native)
    calls = rollout["model_calls"]
    assert {c["protocol"] for c in calls} == {"responses"}
    # Copilot records Chat's words on every protocol; every Responses reply of the run was `completed`.
    assert rollout["extensions"]["copilot"]["finish_reasons"] == ["tool_calls", "tool_calls", "stop"]
    assert [c["finish_reason"] for c in calls] == [a["finish_reason"] for a in attempts(paths)] == ["completed"] * 3
    assert [c["response_id"] for c in calls] == [a["response_id"] for a in attempts(paths)]
    assert gap_codes(rollout) == {**ALWAYS, "model_calls.finish_reason_translated": None}
    assert checks(paths)["calls.response_metadata"].status == Status.PASS


def test_responses_omitted_usage_is_recorded_with_zero_output_tokens(tmp_path: Path) -> None:
    paths = materialize("responses_usage_omitted", tmp_path / "ep")
    rollout = normalize(paths.native)
    for c in rollout["model_calls"]:
        assert c["token_stats"] == {"prompt": None, "completion": 0, "reasoning": None, "total": None, "cached": 0}
    assert rollout["invocations"][0]["token_totals"] == {
        "prompt": 0,
        "completion": 0,
        "reasoning": None,
        "total": None,
        "cached": 0,
    }


def test_messages_input_tokens_already_hold_the_cache_reads(tmp_path: Path) -> None:
    paths = materialize("messages_tool_success", tmp_path / "ep")
    rollout = normalize(paths.native)
    first = rollout["model_calls"][0]
    assert (first["protocol"], first["finish_reason"]) == ("messages", "tool_use")
    # The wire sent Anthropic's disjoint counts (input_tokens 97 beside 3 cache reads); Copilot recorded their sum.
    start = json.loads(attempts(paths)[0]["sse_events"][0])["message"]["usage"]
    assert (start["input_tokens"], start["cache_read_input_tokens"]) == (97, 3)
    record = next(e for e in read_lines(events_file(paths)) if e["type"] == "session.usage_record")["data"]["usage"]
    assert (record["inputTokens"], record["cacheReadTokens"]) == (100, 3)
    assert first["token_stats"] == {"prompt": 100, "completion": 7, "reasoning": None, "total": None, "cached": 3}
    assert checks(paths)["tokens.match"].status == Status.PASS


def test_hostile_values_in_its_records_are_findings_not_crashes(tmp_path: Path) -> None:
    """Every value Copilot wrote may be of any type: odd ones are read as absent, never fatal."""
    paths = materialize("tool_failure", tmp_path / "ep")

    def odd_session(events: list[dict[str, Any]]) -> None:
        reply = next(e for e in events if e["type"] == "assistant.message")
        reply["data"]["toolRequests"].append({"toolCallId": ["not", "hashable"], "name": 7, "arguments": "x"})
        reply["data"]["turnId"] = {"no": "string"}
        usage = next(e for e in events if e["type"] == "session.usage_record")["data"]["usage"]
        usage.update(inputTokens=-5, outputTokens="many", cacheReadTokens=True, apiEndpoint=["/chat"])
        events.append({"type": "tool.execution_complete", "data": {"toolCallId": 3, "shellExecution": "x"}})
        events.append({"type": "session.compaction_complete", "data": "not an object", "timestamp": 5})

    def odd_stream(events: list[dict[str, Any]]) -> None:
        events[0]["data"] = ["not", "an", "object"]
        start = next(e for e in events if e["type"] == "model.call_start")
        start["data"]["turnId"] = 0  # a number, not Copilot's string

    edit(events_file(paths), odd_session)
    edit(stream_file(paths), odd_stream)
    (paths.native / ".copilot-probe" / "usage.json").write_text('{"modelMetrics": {"m": {"usage": [1]}}}')
    rollout, record = normalize_native(get_harness(HARNESS), paths.native)
    assert record == {"status": "ok", "message": None} and rollout is not None
    first = rollout["model_calls"][0]
    assert first["token_stats"] == {"prompt": None, "completion": None, "reasoning": 2, "total": None, "cached": None}
    assert first["protocol"] is None  # an endpoint that is no string names no protocol
    assert "steps.turn_unrecorded" in gap_codes(rollout) and first["model_call_id"] not in {
        ref for s in rollout["steps"] for ref in s["model_call_refs"]
    }
    # The request without a usable id ran nothing that could be joined to it: only the two real runs are records.
    assert [(t["status"], t["exit_code"]) for t in rollout["tool_calls"]] == [("failed", 7), ("succeeded", 0)]
    assert "token_totals" not in rollout["invocations"][0]

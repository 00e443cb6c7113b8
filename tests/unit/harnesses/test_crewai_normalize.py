"""The CrewAI normalizer on what our driver saved of CrewAI's own reports in real runs (its events, what kickoff
returned or raised), on edited copies that make exactly the check of each fact it reads fail, and on missing,
truncated and hostile records."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from orchestrator.checks import Status
from orchestrator.harnesses import NormalizeError, get_harness
from orchestrator.harnesses.crewai.record import unrepr
from orchestrator.paths import EpisodePaths
from tests.unit.harnesses import captured

HARNESS = "crewai"
CAPTURED = captured.captured(HARNESS)
SDK_RETRIES = "model_calls.failed_attempts_unrecorded"

witness = captured.witness
gap_codes = captured.gap_codes


def materialize(name: str, dest: Path) -> EpisodePaths:
    return captured.materialize(HARNESS, name, dest)


def normalize(native: Path) -> dict[str, Any]:
    return get_harness(HARNESS).normalize(native)


def record_path(paths: EpisodePaths) -> Path:
    return paths.native / ".crewai-probe" / "run.json"


def events_path(paths: EpisodePaths) -> Path:
    return paths.native / ".crewai-probe" / "events.jsonl"


def edit_events(paths: EpisodePaths, edit: Callable[[dict[str, Any]], None]) -> None:
    lines = [json.loads(line) for line in events_path(paths).read_text().splitlines() if line.strip()]
    for e in lines:
        edit(e)
    events_path(paths).write_text("".join(json.dumps(e) + "\n" for e in lines))


def edit_record(paths: EpisodePaths, edit: Callable[[dict[str, Any]], None]) -> None:
    record = json.loads(record_path(paths).read_text())
    edit(record)
    record_path(paths).write_text(json.dumps(record))


def failing(paths: EpisodePaths) -> set[str]:
    results = captured.replay(paths, normalize(paths.native))
    return {k for k, r in results.items() if r.status == Status.FAIL and r.kind != "process"}


@pytest.mark.parametrize("name", CAPTURED)
def test_captured_episode_gets_the_verdicts_of_its_real_run(tmp_path: Path, name: str) -> None:
    captured.assert_replays_its_real_run(HARNESS, name, tmp_path / name)


def test_calls_are_crewais_llm_events_with_the_ids_times_and_counts_it_reported(tmp_path: Path) -> None:
    paths = materialize("parallel_tools", tmp_path / "ep")
    rollout = normalize(paths.native)
    sent = [e for e in witness(paths) if e["event"] == "attempt"]
    calls = rollout["model_calls"]
    started = [
        e["call_id"]
        for e in map(json.loads, events_path(paths).read_text().splitlines()[1:])
        if e.get("type") == "llm_call_started"
    ]
    assert [c["model_call_id"] for c in calls] == started  # CrewAI's own call ids
    assert [c["response_id"] for c in calls] == [a["response_id"] for a in sent]
    assert [c["finish_reason"] for c in calls] == ["tool_calls", "stop"]
    for c, a in zip(calls, sent, strict=True):
        assert c["token_stats"] == a["usage"]
        assert (c["protocol"], c["status_code"]) == ("chat", 200)
        assert c["started_at"] < c["completed_at"]
    assert [(s["step_no"], s["model_call_refs"]) for s in rollout["steps"]] == [
        (1, [calls[0]["model_call_id"]]),
        (2, [calls[1]["model_call_id"]]),
    ]
    assert [t["step_no"] for t in rollout["tool_calls"]] == [1, 1]
    (inv,) = rollout["invocations"]
    assert [m["role"] for m in inv["conversation"]] == ["system", "user", "assistant", "tool", "tool", "assistant"]
    # The crew's usage as kickoff returned it: CrewAI's own sums.
    assert inv["token_totals"]["prompt"] == sum(a["usage"]["prompt"] for a in sent)
    assert rollout["outcome"] == {
        "final_answer": "PROBE_DONE",
        "status": "completed",
        "failure_kind": None,
        "failure_reason": None,
    }
    assert set(gap_codes(rollout)) == {"model_calls.status_code_implied", SDK_RETRIES, "tool_calls.exit_code_in_text"}


def test_a_failed_command_is_failed_by_the_exit_code_our_tool_wrote(tmp_path: Path) -> None:
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
        assert (t["tool_name"], t["arguments"]) == ("bash", sent[t["tool_call_id"]]["arguments"])
        assert t["output"] == seen[t["tool_call_id"]]


def test_retries_inside_the_provider_sdk_leave_no_event(tmp_path: Path) -> None:
    paths = materialize("retry_429", tmp_path / "ep")
    rollout = normalize(paths.native)
    statuses = [e["status"] for e in witness(paths) if e["event"] == "attempt" and e["kind"] == "model"]
    assert statuses == [429, 429, 200, 200, 200]
    assert [c["status_code"] for c in rollout["model_calls"]] == [200, 200, 200]
    assert gap_codes(rollout)[SDK_RETRIES] == ["E1", "E7"]


def test_with_no_sdk_retries_crewai_reports_every_failed_attempt_once(tmp_path: Path) -> None:
    paths = materialize("retry_429_max_retries_0", tmp_path / "ep")
    rollout = normalize(paths.native)
    calls = rollout["model_calls"]
    assert [(c["status_code"], c["error_category"]) for c in calls] == [
        (429, "http_429"),
        (429, "http_429"),
        (200, None),
        (200, None),
        (200, None),
    ]
    assert "scripted rate limit" in calls[0]["error"]
    assert [len(s["model_call_refs"]) for s in rollout["steps"]] == [3, 1, 1]
    assert rollout["provenance"] == {"retry_placement": "inferred"}
    assert SDK_RETRIES not in gap_codes(rollout)
    # CrewAI emits llm_call_failed twice for each: one call each, named in the extension.
    assert rollout["extensions"]["crewai"]["failures_reported_twice"] == sorted(c["model_call_id"] for c in calls[:2])


def test_a_cut_stream_is_a_connection_failure_of_its_step(tmp_path: Path) -> None:
    paths = materialize("stream_cut_max_retries_0", tmp_path / "ep")
    first = normalize(paths.native)["model_calls"][0]
    assert (first["status_code"], first["error_category"]) == (None, "connection")
    assert first["error"] == "Failed to connect to OpenAI API: Connection error."


def test_a_terminal_error_is_what_kickoff_raised_and_the_history_what_crewai_last_sent(tmp_path: Path) -> None:
    paths = materialize("model_error", tmp_path / "ep")
    rollout = normalize(paths.native)
    # The agent retried the task twice: three calls, all 400, in one step that never got its reply.
    assert [(c["status_code"], c["error_category"]) for c in rollout["model_calls"]] == [(400, "http_400")] * 3
    assert [len(s["model_call_refs"]) for s in rollout["steps"]] == [3]
    assert rollout["outcome"]["status"] == "error"
    assert rollout["outcome"]["failure_kind"] == "openai.BadRequestError"
    assert "scripted invalid request" in rollout["outcome"]["failure_reason"]
    (inv,) = rollout["invocations"]
    assert [m["role"] for m in inv["conversation"]] == ["system", "user"]
    # The last call failed: nothing came after what it sent, so no history is missing.
    assert "history.from_last_request" not in gap_codes(rollout)


def test_omitted_usage_is_zero_total_and_the_other_counts_as_recorded(tmp_path: Path) -> None:
    paths = materialize("usage_omitted", tmp_path / "ep")
    rollout = normalize(paths.native)
    assert {c["token_stats"]["total"] for c in rollout["model_calls"]} == {0}
    assert "tokens.match" in failing(paths)


def test_responses_and_messages_name_their_protocol_from_the_llm_crewai_reported(tmp_path: Path) -> None:
    for name, protocol in (("responses_tool_success", "responses"), ("messages_parallel_tools", "messages")):
        paths = materialize(name, tmp_path / name)
        rollout = normalize(paths.native)
        assert {c["protocol"] for c in rollout["model_calls"]} == {protocol}
        sent = [e["tool_call_id"] for e in witness(paths) if e["event"] == "tool_call"]
        assert sorted(t["tool_call_id"] for t in rollout["tool_calls"]) == sorted(sent)
        assert all(t["step_no"] == 1 for t in rollout["tool_calls"][:1])


# Negative controls: each fact read from CrewAI's reports, edited in the native files, fails its check.
def _response_id(e: dict[str, Any]) -> None:
    if e.get("type") == "llm_call_completed":
        e["response_id"] = "chatcmpl-invented"


def _prompt_tokens(e: dict[str, Any]) -> None:
    if e.get("type") == "llm_call_completed":
        e["usage"]["prompt_tokens"] += 1


def _finish_reason(e: dict[str, Any]) -> None:
    if e.get("type") == "llm_call_completed":
        e["finish_reason"] = "length"


def _late_start(e: dict[str, Any]) -> None:
    if e.get("type") == "llm_call_started":
        e["timestamp"] = "2030-01-01T00:00:00Z"


@pytest.mark.parametrize(
    ("edit", "check"),
    [
        (_response_id, "attempts.multiset"),
        (_prompt_tokens, "tokens.match"),
        (_finish_reason, "calls.response_metadata"),
        (_late_start, "calls.witness_times"),
    ],
    ids=["response_id", "tokens", "finish_reason", "times"],
)
def test_an_edited_event_fails_the_check_of_what_was_edited(
    tmp_path: Path, edit: Callable[[dict[str, Any]], None], check: str
) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    assert check not in failing(paths)
    edit_events(paths, edit)
    assert check in failing(paths)


def _exit_code(record: dict[str, Any]) -> None:
    for m in record["returned"]["tasks_output"][0]["messages"]:
        if m["role"] == "tool":
            m["content"] = m["content"].replace("Exit code: 7", "Exit code: 0")


def _answer(record: dict[str, Any]) -> None:
    record["returned"]["raw"] = "PROBE_DONE?"


def _tool_id(record: dict[str, Any]) -> None:
    for m in record["returned"]["tasks_output"][0]["messages"]:
        for tc in m.get("tool_calls") or []:
            tc["id"] = "call_invented"
        if m["role"] == "tool":
            m["tool_call_id"] = "call_invented"


@pytest.mark.parametrize(
    ("edit", "check"),
    [(_exit_code, "tools.witness_status"), (_answer, "outcome.final_answer"), (_tool_id, "tools.witness_ids")],
    ids=["exit_code", "answer", "tool_id"],
)
def test_an_edited_kickoff_result_fails_the_check_of_what_was_edited(
    tmp_path: Path, edit: Callable[[dict[str, Any]], None], check: str
) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    assert check not in failing(paths)
    edit_record(paths, edit)
    assert check in failing(paths)


def test_an_edited_failure_status_fails_the_attempt_join(tmp_path: Path) -> None:
    paths = materialize("retry_429_max_retries_0", tmp_path / "ep")
    assert "attempts.multiset" not in failing(paths)

    def to_500(e: dict[str, Any]) -> None:
        if e.get("type") == "llm_call_failed":
            e["error"] = e["error"].replace("Error code: 429", "Error code: 500")

    edit_events(paths, to_500)
    assert "attempts.multiset" in failing(paths)


def test_values_crewai_wrote_as_reprs_at_its_depth_cap_are_read_back() -> None:
    # messages[2].tool_calls[0].function.name sits five levels down: CrewAI wrote it as repr('bash').
    messages = [{}, {}, {"tool_calls": [{"function": {"name": "'bash'", "arguments": '\'{"command": "ls"}\''}}]}]
    assert unrepr(messages)[2]["tool_calls"][0]["function"] == {"name": "bash", "arguments": '{"command": "ls"}'}
    # Above the cap a quoted string is the text as written; a repr that is no literal stays a string.
    assert unrepr([{"content": "'quoted'"}]) == [{"content": "'quoted'"}]
    nested = [{}, {}, {"a": [{"b": {"c": "<object at 0x1>"}}]}]
    assert unrepr(nested) == nested


def test_without_a_run_record_the_events_still_tell_the_calls(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    record_path(paths).unlink()
    rollout = normalize(paths.native)
    assert len(rollout["model_calls"]) == 3
    assert {"native.record_missing", "history.from_last_request"} <= set(gap_codes(rollout))
    # No result: the outcome is what CrewAI's events say, and they say nothing terminal here.
    assert rollout["outcome"]["status"] == "unknown"


def test_normalizing_leaves_the_native_files_untouched(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")

    def digests() -> dict[str, str]:
        return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in paths.native.rglob("*") if p.is_file()}

    before = digests()
    normalize(paths.native)
    assert digests() == before


def test_nothing_saved_is_a_clear_error_and_a_foreign_record_a_named_gap(tmp_path: Path) -> None:
    (tmp_path / ".crewai-probe").mkdir()
    with pytest.raises(NormalizeError, match=r"neither run\.json nor any CrewAI event"):
        normalize(tmp_path)
    paths = materialize("tool_failure", tmp_path / "ep")
    record_path(paths).write_text('{"format": "something-else"}')
    assert "native.record_unreadable" in gap_codes(normalize(paths.native))


def test_corrupt_and_cut_event_lines_are_skipped_and_named(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    data = events_path(paths).read_bytes()
    events_path(paths).write_bytes(b"not json\n" + data[: len(data) - 40])
    rollout = normalize(paths.native)
    codes = set(gap_codes(rollout))
    assert {"native.events_corrupt_line", "native.events_truncated"} <= codes
    assert len(rollout["model_calls"]) == 3

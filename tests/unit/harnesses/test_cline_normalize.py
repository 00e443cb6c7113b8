"""The Cline normalizer on records captured from real runs, edited copies of them (negative controls of what it
reads) and hostile ones."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from orchestrator.checks import Status
from orchestrator.harnesses import NormalizeError, get_harness
from orchestrator.harnesses.cline.native import EVENTS, SESSIONS
from orchestrator.harnesses.cline.rollout import tool_output
from orchestrator.paths import EpisodePaths
from orchestrator.verdict import normalize_native
from tests.unit.harnesses import captured

HARNESS = "cline"
CAPTURED = captured.captured(HARNESS)
ALWAYS = {
    "model_calls.response_id_unrecorded": ["E1"],
    "model_calls.status_code_implied": None,
    "model_calls.finish_reason_unrecorded": None,
    "model_calls.failed_attempts_unrecorded": ["E1", "E7"],
    "model_calls.reasoning_tokens_unrecorded": ["E2"],
}
witness = captured.witness
gap_codes = captured.gap_codes


def materialize(name: str, dest: Path) -> EpisodePaths:
    return captured.materialize(HARNESS, name, dest)


def normalize(native: Path) -> dict[str, Any]:
    return get_harness(HARNESS).normalize(native)


def events_of(paths: EpisodePaths) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (paths.native / EVENTS).read_text().splitlines() if line.strip()]


def write_events(paths: EpisodePaths, events: list[dict[str, Any]]) -> None:
    (paths.native / EVENTS).write_text("".join(json.dumps(e, separators=(",", ":")) + "\n" for e in events))


def messages_file(paths: EpisodePaths) -> Path:
    (path,) = (paths.native / SESSIONS).glob("*/*.messages.json")
    return path


def attempts(paths: EpisodePaths) -> list[dict[str, Any]]:
    return [e for e in witness(paths) if e["event"] == "attempt" and e["kind"] == "model"]


def statuses(paths: EpisodePaths, rollout: dict[str, Any]) -> dict[str, Status]:
    return {k: v.status for k, v in captured.replay(paths, rollout).items()}


@pytest.mark.parametrize("name", CAPTURED)
def test_captured_episode_gets_the_verdicts_of_its_real_run(tmp_path: Path, name: str) -> None:
    captured.assert_replays_its_real_run(HARNESS, name, tmp_path / name)


def test_replies_are_the_iterations_of_the_stream_with_the_counts_the_wire_carried(tmp_path: Path) -> None:
    paths = materialize("parallel_tools", tmp_path / "ep")
    rollout = normalize(paths.native)
    sent = attempts(paths)
    calls = rollout["model_calls"]
    assert len(calls) == len(sent) == 2
    for c, a in zip(calls, sent, strict=True):
        assert (c["protocol"], c["status_code"], c["response_id"], c["finish_reason"]) == ("chat", 200, None, None)
        # Cline's inputTokens is the whole prompt (cache reads included); reasoning and total are not kept.
        assert c["token_stats"] == {**a["usage"], "reasoning": None, "total": None}
        assert c["started_at"] < c["completed_at"]
    assert [(s["step_no"], s["model_call_refs"]) for s in rollout["steps"]] == [(1, ["call-1"]), (2, ["call-2"])]
    assert [t["step_no"] for t in rollout["tool_calls"]] == [1, 1]
    (inv,) = rollout["invocations"]
    assert inv["invocation_id"] == rollout["rollout_id"] and inv["parent_invocation_id"] is None
    assert [m["role"] for m in inv["conversation"]] == ["system", "user", "assistant", "tool", "tool", "assistant"]
    # Cline stores the task wrapped in the mode tag of its system prompt, though the wire carried it bare.
    assert inv["conversation"][1]["content"].startswith('<user_input mode="act">')
    assert rollout["harness"] == {"name": "cline", "version": "3.0.65"}
    assert gap_codes(rollout) == ALWAYS


def test_a_failed_command_is_failed_with_the_exit_code_of_its_error_text(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    rollout = normalize(paths.native)
    events = witness(paths)
    sent = {e["tool_call_id"]: e for e in events if e["event"] == "tool_call"}
    seen = {e["tool_call_id"]: e["output"] for e in events if e["event"] == "tool_result_seen"}
    assert [(t["status"], t["exit_code"], t["step_no"]) for t in rollout["tool_calls"]] == [
        ("failed", 7, 1),
        ("succeeded", None, 2),  # run_commands records success, not the code 0
    ]
    for t in rollout["tool_calls"]:
        assert (t["tool_name"], t["arguments"]) == ("run_commands", sent[t["tool_call_id"]]["arguments"])
        # The model was sent the recorded result list as compact JSON: that text, byte for byte.
        assert t["output"] == seen[t["tool_call_id"]]
        assert json.loads(t["output"])[0]["success"] is (t["status"] == "succeeded")
    (inv,) = rollout["invocations"]
    assert [m["content"] for m in inv["conversation"] if m["role"] == "tool"] == [seen[c] for c in sent]
    assert rollout["outcome"] == {
        "final_answer": "PROBE_DONE",
        "status": "completed",
        "failure_kind": None,
        "failure_reason": None,
    }


def test_retries_inside_the_ai_sdk_leave_no_trace(tmp_path: Path) -> None:
    paths = materialize("retry_429", tmp_path / "ep")
    rollout = normalize(paths.native)
    assert [a["status"] for a in attempts(paths)] == [429, 429, 200, 200, 200]
    assert [c["status_code"] for c in rollout["model_calls"]] == [200, 200, 200]
    assert not any("429" in json.dumps(e) for e in events_of(paths))
    assert gap_codes(rollout)["model_calls.failed_attempts_unrecorded"] == ["E1", "E7"]


def test_a_terminal_error_is_a_failed_call_without_status_and_the_outcome(tmp_path: Path) -> None:
    paths = materialize("model_error", tmp_path / "ep")
    rollout = normalize(paths.native)
    (call,) = rollout["model_calls"]
    # Cline keeps the provider's message but no HTTP status; its error class is its own name.
    assert (call["status_code"], call["error_category"], call["error"]) == (None, "unknown", "scripted invalid request")
    assert call["token_stats"] == dict.fromkeys(("prompt", "completion", "reasoning", "total", "cached"))
    assert rollout["outcome"] == {
        "final_answer": None,
        "status": "error",
        "failure_kind": "unknown",
        "failure_reason": "scripted invalid request",
    }
    assert [s["model_call_refs"] for s in rollout["steps"]] == [[call["model_call_id"]]]


def test_a_cut_stream_ends_the_run_with_the_sockets_error_and_runs_no_tool(tmp_path: Path) -> None:
    paths = materialize("stream_cut", tmp_path / "ep")
    rollout = normalize(paths.native)
    assert [a["ended"] for a in attempts(paths)] == ["cut"]
    (call,) = rollout["model_calls"]
    assert call["status_code"] is None and "socket connection was closed" in call["error"]
    assert rollout["tool_calls"] == []
    assert rollout["outcome"]["status"] == "error"


def test_a_run_killed_while_waiting_keeps_only_the_start_of_its_first_iteration(tmp_path: Path) -> None:
    paths = materialize("harness_deadline", tmp_path / "ep")
    rollout = normalize(paths.native)
    assert [e["event"]["type"] for e in events_of(paths) if e["type"] == "agent_event"] == ["iteration_start"]
    assert rollout["model_calls"] == [] and rollout["steps"] == []
    assert "model_calls.reply_unrecorded" in gap_codes(rollout)
    assert rollout["outcome"]["status"] == "unknown"
    # Cline had not yet stored even the task in the session's history.
    (inv,) = rollout["invocations"]
    assert inv["conversation"] == []


def test_omitted_usage_is_recorded_as_zero_in_the_stream(tmp_path: Path) -> None:
    paths = materialize("usage_omitted", tmp_path / "ep")
    rollout = normalize(paths.native)
    assert all(a["usage"] is None for a in attempts(paths))
    for c in rollout["model_calls"]:
        assert c["token_stats"] == {"prompt": 0, "completion": 0, "reasoning": None, "total": None, "cached": None}
    assert statuses(paths, rollout)["tokens.match"] == Status.FAIL


@pytest.mark.parametrize(
    ("name", "protocol"), [("responses_tool_success", "responses"), ("messages_tool_success", "messages")]
)
def test_each_provider_is_its_protocol_and_the_prompt_counts_cache_reads(
    tmp_path: Path, name: str, protocol: str
) -> None:
    paths = materialize(name, tmp_path / "ep")
    rollout = normalize(paths.native)
    sent = attempts(paths)
    assert {c["protocol"] for c in rollout["model_calls"]} == {protocol}
    assert {a["protocol"] for a in sent} == {protocol}
    # Anthropic's wire sends input_tokens without the cache reads; Cline's inputTokens adds them back.
    assert [c["token_stats"]["prompt"] for c in rollout["model_calls"]] == [a["usage"]["prompt"] for a in sent]
    assert [c["token_stats"]["cached"] for c in rollout["model_calls"]] == [a["usage"]["cached"] for a in sent]
    calls = [e["tool_call_id"] for e in witness(paths) if e["event"] == "tool_call"]
    assert [t["tool_call_id"] for t in rollout["tool_calls"]] == calls


def test_a_messages_reply_without_usage_is_refused_by_cline_and_recorded_as_its_error(tmp_path: Path) -> None:
    paths = materialize("messages_usage_omitted", tmp_path / "ep")
    rollout = normalize(paths.native)
    assert [a["status"] for a in attempts(paths)] == [200]
    (call,) = rollout["model_calls"]
    assert call["status_code"] is None and "usage" in call["error"]
    assert rollout["outcome"]["status"] == "error"


# Negative controls: each edit of what Cline recorded makes exactly the check that reads it fail.
def _edit_first_tool_result(paths: EpisodePaths) -> None:
    events = events_of(paths)
    end = next(e for e in events if e.get("event", {}).get("type") == "content_end" and "output" in e["event"])
    end["event"]["output"][0]["result"] = "edited\n"
    write_events(paths, events)


def _edit_exit_code(paths: EpisodePaths) -> None:
    events = events_of(paths)
    end = next(e for e in events if e.get("event", {}).get("type") == "content_end" and "output" in e["event"])
    end["event"]["output"][0]["error"] = "Command exited with code 3"
    write_events(paths, events)


def _edit_usage(paths: EpisodePaths) -> None:
    events = events_of(paths)
    usage = next(e for e in events if e.get("event", {}).get("type") == "usage")
    usage["event"]["cacheReadTokens"] += 1
    write_events(paths, events)


def _edit_history_result(paths: EpisodePaths) -> None:
    path = messages_file(paths)
    stored = json.loads(path.read_text())
    block = next(b for m in stored["messages"] for b in m["content"] if b.get("type") == "tool_result")
    block["content"][0]["result"] = "edited\n"
    path.write_text(json.dumps(stored))


def _edit_answer(paths: EpisodePaths) -> None:
    events = events_of(paths)
    events[-1]["text"] = "PROBE_EDITED"
    write_events(paths, events)


@pytest.mark.parametrize(
    ("edit", "check", "also"),
    [
        (_edit_first_tool_result, "tools.witness_output", set()),
        # Cline keeps the exit code only inside the result it sent, so the output the model saw changes with it.
        (_edit_exit_code, "tools.witness_status", {"tools.witness_output"}),
        (_edit_usage, "tokens.match", set()),
        (_edit_history_result, "history.witness_results", set()),
        (_edit_answer, "outcome.final_answer", set()),
    ],
    ids=["tool_result", "exit_code", "usage", "history_result", "final_answer"],
)
def test_an_edited_record_fails_the_check_that_reads_it(
    tmp_path: Path, edit: Callable[[EpisodePaths], None], check: str, also: set[str]
) -> None:
    honest = materialize("tool_failure", tmp_path / "honest")
    before = captured.replay(honest, normalize(honest.native))
    paths = materialize("tool_failure", tmp_path / "edited")
    edit(paths)
    after = captured.replay(paths, normalize(paths.native))
    assert after[check].status == Status.FAIL
    # A reason the honest record does not give (tokens.match fails on it already: no reasoning counts).
    assert set(after[check].reasons) - set(before[check].reasons)
    # Exactly that check (and what the same recorded value feeds) judges the episode differently.
    changed = {k for k, v in after.items() if (v.status, set(v.reasons)) != (before[k].status, set(before[k].reasons))}
    assert changed == {check} | also


def test_tool_output_is_the_compact_json_cline_sends() -> None:
    assert (
        tool_output([{"query": "é", "result": "a\n", "success": True}])
        == '[{"query":"é","result":"a\\n","success":true}]'
    )
    assert tool_output("plain") == "plain"
    assert tool_output(None) is None


def test_normalizing_leaves_the_native_files_untouched(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")

    def digests() -> dict[str, str]:
        return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in paths.native.rglob("*") if p.is_file()}

    before = digests()
    normalize(paths.native)
    assert digests() == before


def test_no_stream_and_no_session_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / ".cline-probe" / "data" / "sessions").mkdir(parents=True)
    with pytest.raises(NormalizeError, match="no event stream"):
        normalize(tmp_path)


def test_a_stream_cut_inside_its_last_line_keeps_what_came_before(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    path = paths.native / EVENTS
    data = path.read_bytes()
    path.write_bytes(data[: data.rstrip(b"\n").rfind(b"\n") + 40])  # run_result, half written
    rollout = normalize(paths.native)
    assert gap_codes(rollout)["events.truncated"] is None
    assert len(rollout["model_calls"]) == 3 and len(rollout["tool_calls"]) == 2
    assert rollout["outcome"]["status"] == "unknown"


@pytest.mark.parametrize(
    ("line", "code"),
    [
        ("{not json", "events.line_unreadable"),
        ("[1, 2]", "events.line_unreadable"),
        ("[" * 500 + "]" * 500, "events.line_unreadable"),
    ],
    ids=["not_json", "not_an_object", "too_deep"],
)
def test_a_bad_line_in_the_stream_is_a_gap_and_the_rest_is_read(tmp_path: Path, line: str, code: str) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    lines = (paths.native / EVENTS).read_text().splitlines()
    lines.insert(3, line)
    (paths.native / EVENTS).write_text("\n".join(lines) + "\n")
    rollout = normalize(paths.native)
    assert code in gap_codes(rollout)
    assert len(rollout["model_calls"]) == 3


@pytest.mark.parametrize(
    "mangle",
    [lambda b: b"", lambda b: b"\x00\xff" * 64, lambda b: b"[]", lambda b: b'{"messages": 5}'],
    ids=["empty", "binary", "a_list", "messages_not_a_list"],
)
def test_a_broken_session_file_is_a_gap_and_the_stream_still_gives_the_calls(
    tmp_path: Path, mangle: Callable[[bytes], bytes]
) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    path = messages_file(paths)
    path.write_bytes(mangle(path.read_bytes()))
    rollout, record = normalize_native(get_harness(HARNESS), paths.native)
    assert record == {"status": "ok", "message": None} and rollout is not None
    assert any(code.startswith("session.") for code in gap_codes(rollout))
    assert len(rollout["model_calls"]) == 3


def test_a_second_stored_session_is_a_child_invocation_and_its_calls_a_named_gap(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    (lead,) = (paths.native / SESSIONS).iterdir()
    child = lead.with_name("9_child")
    child.mkdir()
    manifest = json.loads((lead / f"{lead.name}.json").read_text())
    manifest |= {"session_id": "9_child", "parent_session_id": lead.name, "started_at": "2099-01-01T00:00:00.000Z"}
    (child / "9_child.json").write_text(json.dumps(manifest))
    (child / "9_child.messages.json").write_text((lead / f"{lead.name}.messages.json").read_text())
    rollout = normalize(paths.native)
    assert [
        (i["invocation_id"], i["parent_invocation_id"], len(i["model_call_refs"])) for i in rollout["invocations"]
    ] == [
        (lead.name, None, 3),
        ("9_child", lead.name, 0),
    ]
    assert gap_codes(rollout)["model_calls.owner_unrecorded"] == ["E8"]

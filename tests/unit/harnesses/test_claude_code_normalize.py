"""The Claude Code normalizer on native files captured from real runs, and on truncated and corrupt copies of them."""

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
from orchestrator.harnesses.claude_code.attempts import token_stats
from orchestrator.paths import EpisodePaths
from orchestrator.verdict import collect_evidence, normalize_native
from tests.unit.harnesses import captured

HARNESS = "claude-code"
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "native" / "claude-code"
CAPTURED = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())
STATUS_GAP = "model_calls.status_code_unrecorded"
OPEN_GAP = "model_calls.attempt_outcome_unrecorded"


def materialize(name: str, dest: Path) -> EpisodePaths:
    return captured.materialize(HARNESS, name, dest)


def normalize(native: Path) -> dict[str, Any]:
    return get_harness("claude-code").normalize(native)


def transcript(paths: EpisodePaths) -> Path:
    (path,) = (paths.native / ".claude" / "projects").glob("*/*.jsonl")
    return path


def stream(paths: EpisodePaths) -> Path:
    return paths.native / ".claude-probe" / "stream.jsonl"


witness = captured.witness


def attempts(paths: EpisodePaths) -> list[dict[str, Any]]:
    return [e for e in witness(paths) if e["event"] == "attempt" and e["kind"] == "model"]


gap_codes = captured.gap_codes


def checks(paths: EpisodePaths, rollout: dict[str, Any]) -> dict[str, Any]:
    scenario = json.loads(paths.scenario.read_text())
    return {r.id: r for r in run_checks(collect_evidence(scenario, paths, rollout, None), scope_of(scenario))}


@pytest.mark.parametrize("name", CAPTURED)
def test_captured_episode_gets_the_verdicts_of_its_real_run(tmp_path: Path, name: str) -> None:
    captured.assert_replays_its_real_run(HARNESS, name, tmp_path / name)


def test_replies_join_the_witness_by_message_id_with_the_usage_claude_code_recorded(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    rollout = normalize(paths.native)
    sent = attempts(paths)
    calls = rollout["model_calls"]
    assert [c["response_id"] for c in calls] == [a["response_id"] for a in sent]
    assert [c["finish_reason"] for c in calls] == ["tool_use", "tool_use", "end_turn"]
    assert all(c["protocol"] == "messages" and c["status_code"] == 200 for c in calls)
    for c, a in zip(calls, sent, strict=True):
        # Prompt, completion and cached match the wire; the reasoning count is Claude Code's own 0.
        assert (c["token_stats"]["prompt"], c["token_stats"]["completion"], c["token_stats"]["cached"]) == (
            a["usage"]["prompt"],
            a["usage"]["completion"],
            a["usage"]["cached"],
        )
        assert c["token_stats"]["reasoning"] == 0 and a["usage"]["reasoning"] is None
        assert c["token_stats"]["total"] is None
        assert c["started_at"] < c["completed_at"]
    assert gap_codes(rollout) == {STATUS_GAP: None}


def test_claude_code_records_anthropics_disjoint_counts_and_the_prompt_is_their_sum(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    entries = [json.loads(line) for line in transcript(paths).read_text().splitlines()]
    recorded = {e["message"]["id"]: e["message"]["usage"] for e in entries if e.get("type") == "assistant"}
    calls = {c["response_id"]: c for c in normalize(paths.native)["model_calls"]}
    sent = attempts(paths)
    assert sorted(recorded) == sorted(a["response_id"] for a in sent)
    for a in sent:
        u, wire = recorded[a["response_id"]], a["usage"]
        # The transcript keeps the API's usage verbatim: input_tokens leaves out the cache reads the witness counts.
        assert (u["input_tokens"], u["cache_read_input_tokens"]) == (wire["prompt"] - wire["cached"], wire["cached"])
        assert calls[a["response_id"]]["token_stats"]["prompt"] == wire["prompt"] > u["input_tokens"]


def test_reading_input_tokens_as_the_whole_prompt_fails_tokens_match_on_the_prompt(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    rollout = normalize(paths.native)
    honest = checks(paths, rollout)["tokens.match"]
    # Claude Code's own reasoning 0 already fails the check, but never on the prompt.
    assert honest.status == Status.FAIL and not [r for r in honest.reasons if "token_stats.prompt" in r]
    for c in rollout["model_calls"]:
        c["token_stats"]["prompt"] -= c["token_stats"]["cached"]  # what input_tokens alone says
    lied = checks(paths, rollout)["tokens.match"]
    assert len([r for r in lied.reasons if "token_stats.prompt" in r]) == len(rollout["model_calls"]) == 3


@pytest.mark.parametrize(
    ("usage", "prompt", "cached"),
    [
        ({"input_tokens": 97, "cache_read_input_tokens": 3, "cache_creation_input_tokens": 2}, 102, 3),
        ({"input_tokens": 97, "cache_read_input_tokens": 3}, None, 3),  # an unrecorded write: the sum is unknown
        ({"input_tokens": 97, "cache_read_input_tokens": None, "cache_creation_input_tokens": 0}, None, None),
        ({"cache_read_input_tokens": 3, "cache_creation_input_tokens": 0}, None, 3),
        ({"input_tokens": True, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}, None, 0),
    ],
)
def test_prompt_is_input_plus_cache_reads_and_writes_and_unknown_when_a_part_is(
    usage: dict[str, Any], prompt: int | None, cached: int | None
) -> None:
    stats = token_stats({**usage, "output_tokens": 5})
    assert (stats["prompt"], stats["cached"], stats["completion"]) == (prompt, cached, 5)


def test_tool_records_carry_status_exit_code_and_the_output_the_model_saw(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    rollout = normalize(paths.native)
    events = witness(paths)
    sent = {e["tool_call_id"]: e for e in events if e["event"] == "tool_call"}
    seen = {e["tool_call_id"]: e["output"] for e in events if e["event"] == "tool_result_seen"}
    assert [(t["status"], t["exit_code"], t["step_no"]) for t in rollout["tool_calls"]] == [
        ("failed", 7, 1),
        ("succeeded", None, 2),
    ]
    for t in rollout["tool_calls"]:
        assert t["tool_name"] == sent[t["tool_call_id"]]["name"] == "Bash"
        assert t["arguments"] == sent[t["tool_call_id"]]["arguments"]
        assert t["output"] == seen[t["tool_call_id"]]
    assert rollout["outcome"] == {
        "final_answer": "PROBE_DONE",
        "status": "completed",
        "failure_kind": None,
        "failure_reason": None,
    }
    assert rollout["harness"] == {"name": "claude-code", "version": "2.1.328"}


def test_one_message_split_over_two_records_is_one_call_with_both_tool_calls(tmp_path: Path) -> None:
    paths = materialize("parallel_tools", tmp_path / "ep")
    entries = [json.loads(line) for line in transcript(paths).read_text().splitlines()]
    first = [e["message"]["id"] for e in entries if e["type"] == "assistant"]
    assert first[0] == first[1]  # Claude Code writes one record per content block
    rollout = normalize(paths.native)
    assert len(rollout["model_calls"]) == 2
    assert [t["step_no"] for t in rollout["tool_calls"]] == [1, 1]
    (inv,) = rollout["invocations"]
    assert inv["invocation_id"] == rollout["rollout_id"] and inv["parent_invocation_id"] is None
    assert [m["role"] for m in inv["conversation"]] == ["user", "assistant", "tool", "tool", "assistant"]
    assert len(inv["conversation"][1]["tool_calls"]) == 2


def test_retried_429s_are_calls_with_their_status_and_payload(tmp_path: Path) -> None:
    paths = materialize("retry_429", tmp_path / "ep")
    rollout = normalize(paths.native)
    calls = rollout["model_calls"]
    assert [a["status"] for a in attempts(paths)] == [429, 429, 200, 200, 200]
    assert [(c["status_code"], c["error_category"]) for c in calls] == [
        (429, "http_429"),
        (429, "http_429"),
        (200, None),
        (200, None),
        (200, None),
    ]
    assert "scripted rate limit" in calls[0]["error"]["message"]
    assert all(set(c["token_stats"].values()) == {None} for c in calls[:2])
    assert [len(s["model_call_refs"]) for s in rollout["steps"]] == [3, 1, 1]


def test_a_cut_stream_is_a_connection_error_without_status(tmp_path: Path) -> None:
    paths = materialize("stream_cut", tmp_path / "ep")
    first = normalize(paths.native)["model_calls"][0]
    assert (first["status_code"], first["error_category"], first["response_id"]) == (None, "connection", None)
    assert first["error"]["connection"]["code"] == "ECONNRESET"


def test_a_terminal_400_is_recorded_once_and_its_fallback_retries_without_outcome(tmp_path: Path) -> None:
    paths = materialize("model_error", tmp_path / "ep")
    rollout = normalize(paths.native)
    calls = rollout["model_calls"]
    assert len(attempts(paths)) == len(calls) == 6
    # Claude Code retried the 400 with fewer beta features: each retry left a request record, no outcome.
    assert [c["error_category"] for c in calls] == ["outcome_unrecorded"] * 5 + ["http_400"]
    assert calls[-1]["error"]["message"] == "API Error: 400 scripted invalid request"
    assert all(c["completed_at"] is None for c in calls[:5])
    assert gap_codes(rollout)[OPEN_GAP] == ["E1", "E7"]
    assert STATUS_GAP not in gap_codes(rollout)  # no reply was stored, so no status was assumed
    out = rollout["outcome"]
    assert (out["status"], out["final_answer"], out["failure_kind"]) == ("error", None, "api_error")
    assert "scripted invalid request" in out["failure_reason"]
    (step,) = rollout["steps"]
    assert step["model_call_refs"] == [c["model_call_id"] for c in calls]


def test_a_reply_abandoned_at_the_byte_watchdog_leaves_only_its_request(tmp_path: Path) -> None:
    paths = materialize("harness_deadline", tmp_path / "ep")
    assert attempts(paths)[0]["ended"] == "withheld"
    rollout = normalize(paths.native)
    first = rollout["model_calls"][0]
    assert (first["status_code"], first["error_category"], first["completed_at"]) == (None, "outcome_unrecorded", None)
    assert first["started_at"] is not None
    assert rollout["steps"][0]["model_call_refs"][0] == first["model_call_id"]
    assert gap_codes(rollout)[OPEN_GAP] == ["E1", "E7"]


def test_omitted_usage_is_recorded_as_zeros(tmp_path: Path) -> None:
    paths = materialize("usage_omitted", tmp_path / "ep")
    rollout = normalize(paths.native)
    assert all(a["usage"] is None for a in attempts(paths))
    # Claude Code writes 0 where the provider sent no count: kept as reported, the checks judge it.
    for c in rollout["model_calls"]:
        assert c["token_stats"] == {"prompt": 0, "completion": 0, "reasoning": 0, "total": None, "cached": 0}
    assert checks(paths, rollout)["tokens.match"].status == Status.FAIL


def test_normalizing_leaves_the_native_files_untouched(tmp_path: Path) -> None:
    paths = materialize("retry_429", tmp_path / "ep")

    def digests() -> dict[str, str]:
        return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in paths.native.rglob("*") if p.is_file()}

    before = digests()
    normalize(paths.native)
    assert digests() == before


# --- truncated, corrupt and missing native files -------------------------------------------------------------


def test_no_transcript_is_a_clear_error(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    transcript(paths).unlink()
    with pytest.raises(NormalizeError, match="no session transcript"):
        normalize(paths.native)
    with pytest.raises(NormalizeError, match="no session transcript"):
        normalize(tmp_path / "empty")


@pytest.mark.parametrize("content", [b"", b"\n\n", b"\x00\xff garbage \xfe", b'[1, 2]\n"text"\n'])
def test_an_empty_or_garbage_transcript_is_a_clear_error(tmp_path: Path, content: bytes) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    transcript(paths).write_bytes(content)
    rollout, record = normalize_native(get_harness("claude-code"), paths.native)
    assert rollout is None and record["status"] == "error"
    assert "holds no readable record" in record["message"]


def test_a_transcript_cut_mid_line_keeps_what_came_before(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    path = transcript(paths)
    data = path.read_bytes()
    last_reply = data.rindex(b'{"parentUuid"')  # the start of the final record (the last reply's block)
    path.write_bytes(data[: last_reply + 200])
    rollout = normalize(paths.native)
    assert "native.transcript_truncated" in gap_codes(rollout)
    # The final reply record is lost: its request stays without outcome, and the checks see the gap.
    assert rollout["model_calls"][-1]["error_category"] == "outcome_unrecorded"
    assert [str(f) for f in faults(rollout, "probe-rollout/v1")] == []


def test_a_corrupt_line_in_the_middle_is_skipped_and_named(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    path = transcript(paths)
    lines = path.read_bytes().split(b"\n")
    first_reply = next(i for i, ln in enumerate(lines) if b'"type":"assistant"' in ln)
    lines[first_reply] = b"#" + lines[first_reply]
    path.write_bytes(b"\n".join(lines))
    rollout = normalize(paths.native)
    assert "native.transcript_corrupt_line" in gap_codes(rollout)
    # The first reply's record is gone, so its tool call is no longer joined to a request.
    assert [t["exit_code"] for t in rollout["tool_calls"]] == [None]


def test_without_the_stream_the_outcome_comes_from_the_transcript(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    stream(paths).unlink()
    rollout = normalize(paths.native)
    assert "native.stream_missing" in gap_codes(rollout)
    assert rollout["outcome"]["final_answer"] == "PROBE_DONE"


def test_a_stream_cut_before_its_result_falls_back_to_the_transcript(tmp_path: Path) -> None:
    paths = materialize("model_error", tmp_path / "ep")
    data = stream(paths).read_bytes()
    last_line = data.rindex(b"\n", 0, len(data) - 1) + 1  # the `result` event is the last line
    assert b'"type":"result"' in data[last_line:]
    stream(paths).write_bytes(data[: last_line + 40])
    rollout = normalize(paths.native)
    assert "native.stream_truncated" in gap_codes(rollout)
    out = rollout["outcome"]
    assert (out["status"], out["failure_kind"]) == ("error", "api_error")
    assert out["failure_reason"] == "API Error: 400 scripted invalid request"


def test_neither_result_nor_final_reply_leaves_the_outcome_unknown(tmp_path: Path) -> None:
    paths = materialize("harness_deadline", tmp_path / "ep")
    stream(paths).unlink()
    path = transcript(paths)
    lines = path.read_text().splitlines(keepends=True)
    first_reply = next(i for i, ln in enumerate(lines) if '"type":"assistant"' in ln)
    path.write_text("".join(lines[:first_reply]))
    rollout = normalize(paths.native)
    assert rollout["outcome"]["status"] == "unknown"
    assert rollout["tool_calls"] == [] and rollout["model_calls"][-1]["error_category"] == "outcome_unrecorded"


def test_two_transcripts_and_no_stream_are_ambiguous(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    path = transcript(paths)
    shutil.copyfile(path, path.with_name("00000000-0000-0000-0000-000000000000.jsonl"))
    assert "native.other_session_ignored" in gap_codes(normalize(paths.native))
    stream(paths).unlink()
    with pytest.raises(NormalizeError, match="several session transcripts"):
        normalize(paths.native)


def test_a_sub_agent_transcript_becomes_a_child_invocation(tmp_path: Path) -> None:
    # No catalogue scenario makes Claude Code start a sub-agent; this places a copy of a real transcript where
    # Claude Code keeps sub-agent transcripts (<session>/subagents/agent-<id>.jsonl), with its ids made distinct.
    paths = materialize("tool_failure", tmp_path / "ep")
    path = transcript(paths)
    sub = path.parent / path.stem / "subagents" / "agent-a1.jsonl"
    sub.parent.mkdir(parents=True)
    text = path.read_text().replace('"id":"', '"id":"sub-').replace('"requestRef":"', '"requestRef":"sub-')
    sub.write_text(text.replace('"tool_use_id":"', '"tool_use_id":"sub-'))
    rollout = normalize(paths.native)
    root, child = rollout["invocations"]
    assert child["parent_invocation_id"] == root["invocation_id"] == rollout["rollout_id"]
    assert child["invocation_id"] == f"{root['invocation_id']}/agent-a1"
    assert len(child["model_call_refs"]) == len(root["model_call_refs"]) == 3
    owned = checks(paths, rollout)
    assert owned["ownership.call_owner"].status == owned["invocations.parent"].status == Status.PASS


@pytest.mark.parametrize("name", CAPTURED)
def test_any_cut_of_the_transcript_normalizes_or_fails_clearly(tmp_path: Path, name: str) -> None:
    paths = materialize(name, tmp_path / "ep")
    path = transcript(paths)
    data = path.read_bytes()
    for cut in range(0, len(data), max(1, len(data) // 25)):
        path.write_bytes(data[:cut])
        rollout, record = normalize_native(get_harness("claude-code"), paths.native)
        assert not (record["message"] or "").startswith("normalizer crashed"), (cut, record["message"])
        if rollout is not None:
            assert [str(f) for f in faults(rollout, "probe-rollout/v1")] == [], cut

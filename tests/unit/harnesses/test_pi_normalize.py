"""The Pi normalizer on session files captured from real runs, and on truncated and corrupt copies of them."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from orchestrator.checks import Status, run_checks, scope_of
from orchestrator.harnesses import NormalizeError, get_harness
from orchestrator.harnesses.pi.calls import model_call
from orchestrator.paths import EpisodePaths
from orchestrator.verdict import collect_evidence, normalize_native
from tests.unit.harnesses import captured

HARNESS = "pi"
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "native" / "pi"
CAPTURED = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())
ALWAYS = {
    "model_calls.status_code_inferred": None,
    "model_calls.finish_reason_translated": None,
    "model_calls.reasoning_tokens_unrecorded": ["E2"],
}
SDK_RETRIES = {"model_calls.failed_attempts_unrecorded": ["E1", "E7"]}


def materialize(name: str, dest: Path) -> EpisodePaths:
    return captured.materialize(HARNESS, name, dest)


def normalize(native: Path) -> dict[str, Any]:
    return get_harness("pi").normalize(native)


def session_file(paths: EpisodePaths) -> Path:
    (path,) = (paths.native / ".pi-probe" / "sessions").glob("*.jsonl")
    return path


witness = captured.witness


def session_entries(paths: EpisodePaths) -> list[dict[str, Any]]:
    return [json.loads(line) for line in session_file(paths).read_text().splitlines() if line.strip()]


gap_codes = captured.gap_codes


@pytest.mark.parametrize("name", CAPTURED)
def test_captured_episode_gets_the_verdicts_of_its_real_run(tmp_path: Path, name: str) -> None:
    captured.assert_replays_its_real_run(HARNESS, name, tmp_path / name)


def test_replies_keep_response_ids_times_and_the_counts_the_wire_carried(tmp_path: Path) -> None:
    paths = materialize("parallel_tools", tmp_path / "ep")
    rollout = normalize(paths.native)
    sent = [e for e in witness(paths) if e["event"] == "attempt"]
    calls = rollout["model_calls"]
    assert [c["response_id"] for c in calls] == [a["response_id"] for a in sent]
    assert [c["finish_reason"] for c in calls] == ["tool_calls", "stop"]
    for c, a in zip(calls, sent, strict=True):
        # pi-ai stores input without the cached tokens; the rollout gives the prompt count the wire carried.
        assert c["token_stats"] == {**a["usage"], "reasoning": None}
        assert c["started_at"] < c["completed_at"]
    assert [(s["step_no"], len(s["model_call_refs"])) for s in rollout["steps"]] == [(1, 1), (2, 1)]
    assert [t["step_no"] for t in rollout["tool_calls"]] == [1, 1]
    (inv,) = rollout["invocations"]
    assert inv["invocation_id"] == rollout["rollout_id"] and inv["parent_invocation_id"] is None
    assert [m["role"] for m in inv["conversation"]] == ["user", "assistant", "tool", "tool", "assistant"]
    assert gap_codes(rollout) == {**ALWAYS, **SDK_RETRIES}


def test_a_failed_command_is_failed_with_its_exit_code_and_the_output_the_model_saw(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    rollout = normalize(paths.native)
    events = witness(paths)
    sent = {e["tool_call_id"]: e for e in events if e["event"] == "tool_call"}
    seen = {e["tool_call_id"]: e["output"] for e in events if e["event"] == "tool_result_seen"}
    assert [(t["status"], t["exit_code"], t["step_no"]) for t in rollout["tool_calls"]] == [
        ("failed", 7, 1),
        ("succeeded", None, 2),  # Pi writes no exit code for a command that succeeded
    ]
    for t in rollout["tool_calls"]:
        assert (t["tool_name"], t["arguments"]) == ("bash", sent[t["tool_call_id"]]["arguments"])
        assert t["output"] == seen[t["tool_call_id"]]
    assert rollout["outcome"] == {
        "final_answer": "PROBE_DONE",
        "status": "completed",
        "failure_kind": None,
        "failure_reason": None,
    }


def test_retries_inside_the_provider_sdk_leave_no_trace(tmp_path: Path) -> None:
    paths = materialize("retry_429", tmp_path / "ep")
    rollout = normalize(paths.native)
    statuses = [e["status"] for e in witness(paths) if e["event"] == "attempt" and e["kind"] == "model"]
    assert statuses == [429, 429, 200, 200, 200]
    assert [c["status_code"] for c in rollout["model_calls"]] == [200, 200, 200]
    assert gap_codes(rollout)["model_calls.failed_attempts_unrecorded"] == ["E1", "E7"]


def test_retries_of_pis_own_layer_are_attempts_of_their_step(tmp_path: Path) -> None:
    paths = materialize("retry_429_provider_retries_0", tmp_path / "ep")
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
    # pi-ai starts every message at zero usage: a failed attempt reports 0 tokens, not unknown.
    assert set(calls[0]["token_stats"].values()) == {0, None}
    assert [len(s["model_call_refs"]) for s in rollout["steps"]] == [3, 1, 1]
    # The failed replies were dropped from Pi's context: the history holds only what the model saw.
    (inv,) = rollout["invocations"]
    assert [m["role"] for m in inv["conversation"]] == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert "model_calls.failed_attempts_unrecorded" not in gap_codes(rollout)


def test_a_terminal_error_is_the_outcome(tmp_path: Path) -> None:
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
        "failure_kind": "http_400",
        "failure_reason": "400 scripted invalid request",
    }
    assert [s["model_call_refs"] for s in rollout["steps"]] == [[call["model_call_id"]]]


def test_a_cut_stream_is_an_interrupted_attempt_whose_partial_tool_call_never_ran(tmp_path: Path) -> None:
    paths = materialize("stream_cut", tmp_path / "ep")
    rollout = normalize(paths.native)
    first = rollout["model_calls"][0]
    assert (first["status_code"], first["error_category"], first["error"]) == (None, "stream_cut", "terminated")
    (session,) = rollout["extensions"]["pi"]["sessions"]
    assert len(session["failed_response_ids"]) == 1
    assert len(rollout["tool_calls"]) == 2
    assert [len(s["model_call_refs"]) for s in rollout["steps"]] == [2, 1, 1]


def test_omitted_usage_is_recorded_as_zero(tmp_path: Path) -> None:
    paths = materialize("usage_omitted", tmp_path / "ep")
    rollout = normalize(paths.native)
    for c in rollout["model_calls"]:
        assert c["token_stats"] == {"prompt": 0, "completion": 0, "reasoning": None, "total": 0, "cached": 0}


@pytest.mark.parametrize(("name", "protocol", "finish"), [("responses_tool_success", "responses", "completed")])
def test_responses_tool_call_ids_are_the_models_not_pis_composite(
    tmp_path: Path, name: str, protocol: str, finish: str
) -> None:
    paths = materialize(name, tmp_path / "ep")
    rollout = normalize(paths.native)
    assert "|" in session_file(paths).read_text()  # Pi stores `<call_id>|<item id>`
    sent = [e["tool_call_id"] for e in witness(paths) if e["event"] == "tool_call"]
    assert [t["tool_call_id"] for t in rollout["tool_calls"]] == sent
    (inv,) = rollout["invocations"]
    assert [m["tool_call_id"] for m in inv["conversation"] if m["role"] == "tool"] == sent
    assert {c["protocol"] for c in rollout["model_calls"]} == {protocol}
    assert {c["finish_reason"] for c in rollout["model_calls"]} == {finish}


def test_messages_prompt_is_anthropics_input_plus_cache_and_pis_own_total(tmp_path: Path) -> None:
    paths = materialize("messages_tool_success", tmp_path / "ep")
    rollout = normalize(paths.native)
    first = rollout["model_calls"][0]
    assert (first["protocol"], first["finish_reason"]) == ("messages", "tool_use")
    (entry,) = [e for e in session_entries(paths) if e.get("message", {}).get("responseId") == first["response_id"]]
    # pi-ai keeps Anthropic's disjoint counts (input_tokens 97 beside 3 cache reads); the prompt is their sum, and
    # Pi's total (input + output + cache reads + writes) is prompt + completion.
    assert {k: entry["message"]["usage"][k] for k in ("input", "cacheRead", "cacheWrite")} == {
        "input": 97,
        "cacheRead": 3,
        "cacheWrite": 0,
    }
    assert first["token_stats"] == {"prompt": 100, "completion": 7, "reasoning": None, "total": 107, "cached": 3}
    wire = next(e for e in witness(paths) if e["event"] == "attempt" and e["kind"] == "model")["usage"]
    assert (wire["prompt"], wire["cached"]) == (100, 3)


@pytest.mark.parametrize(
    ("usage", "prompt", "cached"),
    [
        ({"input": 97, "output": 7, "cacheRead": 3, "cacheWrite": 2, "totalTokens": 109}, 102, 3),
        ({"input": 97, "output": 7, "cacheRead": 3, "totalTokens": 107}, None, 3),  # unrecorded writes: unknown
        ({"output": 7, "cacheRead": 3, "cacheWrite": 0}, None, 3),
    ],
)
def test_messages_usage_reads_back_into_one_convention(usage: dict[str, Any], prompt: int | None, cached: int) -> None:
    stats = model_call("inv", "e1", None, {"api": "anthropic-messages", "stopReason": "stop", "usage": usage})
    assert (stats["token_stats"]["prompt"], stats["token_stats"]["cached"]) == (prompt, cached)


def test_normalizing_leaves_the_native_files_untouched(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")

    def digests() -> dict[str, str]:
        return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in paths.native.rglob("*") if p.is_file()}

    before = digests()
    normalize(paths.native)
    assert digests() == before


def test_no_session_file_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / ".pi-probe" / "sessions").mkdir(parents=True)
    with pytest.raises(NormalizeError, match="Pi wrote no session file"):
        normalize(tmp_path)


def test_a_session_cut_inside_its_last_line_keeps_what_came_before(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    path = session_file(paths)
    data = path.read_bytes()
    path.write_bytes(data[: data.rstrip(b"\n").rfind(b"\n") + 200])  # the final reply, half written
    rollout = normalize(paths.native)
    assert gap_codes(rollout)["session.truncated"] is None
    assert len(rollout["model_calls"]) == 2 and len(rollout["tool_calls"]) == 2
    # The last thing Pi recorded is a tool result: neither an answer nor an error.
    assert rollout["outcome"]["status"] == "unknown"


@pytest.mark.parametrize(
    ("mangle", "message"),
    [
        (lambda b: b"", "line 1 is not a Pi session header"),
        (lambda b: b[:50], "line 1 is not a Pi session header"),
        (lambda b: b"\x00\xff" * 64, "unreadable"),
        (lambda b: b'{"type": "message"}\n' + b, "line 1 is not a Pi session header"),
    ],
    ids=["empty", "header_cut", "binary", "no_header"],
)
def test_a_session_without_a_readable_header_is_a_clear_error(tmp_path: Path, mangle: Any, message: str) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    path = session_file(paths)
    path.write_bytes(mangle(path.read_bytes()))
    rollout, record = normalize_native(get_harness("pi"), paths.native)
    assert rollout is None and record["status"] == "error"
    assert not record["message"].startswith("normalizer crashed"), record["message"]
    with pytest.raises(NormalizeError, match=message):
        normalize(paths.native)


def test_corrupt_lines_in_the_middle_become_gaps(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    path = session_file(paths)
    lines = path.read_text().splitlines()
    lines[4] = lines[4][:40]  # the first reply: cut mid-object
    lines[5] = "[1, 2]"  # its tool result: JSON, but no entry
    lines.insert(4, json.dumps({"type": "message", "id": "x", "message": {"role": "assistant", "usage": "many"}}))
    path.write_text("\n".join(lines) + "\n")
    rollout = normalize(paths.native)
    assert gap_codes(rollout)["session.entry_unreadable"] is None
    assert len([g for g in rollout["gaps"] if g["code"] == "session.entry_unreadable"]) == 2
    # The odd entry becomes a call with what it has (nothing); the surviving reply keeps its tool record.
    odd = rollout["model_calls"][0]
    assert (odd["protocol"], odd["token_stats"]["prompt"], odd["started_at"]) == (None, None, None)
    assert [t["exit_code"] for t in rollout["tool_calls"]] == [None]


def test_checks_see_the_recorded_retries_and_the_missing_reasoning_counts(tmp_path: Path) -> None:
    paths = materialize("retry_429_provider_retries_0", tmp_path / "ep")
    rollout = normalize(paths.native)
    scenario = json.loads(paths.scenario.read_text())
    results = {r.id: r for r in run_checks(collect_evidence(scenario, paths, rollout, None), scope_of(scenario))}
    for passing in ("attempts.multiset", "errors.payload_retained", "tools.witness_output"):
        assert results[passing].status == Status.PASS, results[passing].reasons
    # Where the normalizer placed the retries agrees with the wire, but Pi never said: not credited.
    assert results["steps.witness_attempts"].status == Status.NOT_APPLICABLE
    assert results["steps.witness_attempts"].reasons[0].startswith("gap steps.retry_placement_inferred")
    assert results["tokens.match"].status == Status.FAIL
    assert any("reasoning is None" in r for r in results["tokens.match"].reasons)
    assert any("failed attempt carried no usage" in r for r in results["tokens.match"].reasons)

"""The Hermes normalizer on native files captured from real runs, and on truncated and corrupt copies of them."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from orchestrator.checks import Status, run_checks, scope_of
from orchestrator.harnesses import NormalizeError, get_harness
from orchestrator.paths import EpisodePaths
from orchestrator.verdict import collect_evidence, normalize_native
from tests.unit.harnesses import captured

HARNESS = "hermes"
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "native" / "hermes"
CAPTURED = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())
ALWAYS = {
    "model_calls.response_id_unrecorded": ["E1"],
    "model_calls.usage_aggregated": ["E2"],
    "model_calls.failed_attempts_unrecorded": ["E1", "E7", "E8", "E9"],
    "model_calls.started_at_unrecorded": None,
}


def materialize(name: str, dest: Path) -> EpisodePaths:
    return captured.materialize(HARNESS, name, dest)


def normalize(native: Path) -> dict[str, Any]:
    return get_harness("hermes").normalize(native)


witness = captured.witness


gap_codes = captured.gap_codes


@pytest.mark.parametrize("name", CAPTURED)
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
        assert t["tool_name"] == sent[t["tool_call_id"]]["name"] == "terminal"
        assert t["arguments"] == sent[t["tool_call_id"]]["arguments"]
        assert t["output"] == seen[t["tool_call_id"]]
    assert rollout["outcome"] == {
        "final_answer": "PROBE_DONE",
        "status": "completed",
        "failure_kind": None,
        "failure_reason": None,
    }


def test_replies_become_calls_and_steps_without_ids_or_token_counts(tmp_path: Path) -> None:
    paths = materialize("parallel_tools", tmp_path / "ep")
    rollout = normalize(paths.native)
    calls = rollout["model_calls"]
    assert [(c["status_code"], c["response_id"], c["finish_reason"]) for c in calls] == [
        (200, None, "tool_calls"),
        (200, None, "stop"),
    ]
    assert all(set(c["token_stats"].values()) == {None} for c in calls)
    assert all(c["started_at"] is None and c["completed_at"].endswith("Z") for c in calls)
    assert [(s["step_no"], s["model_call_refs"]) for s in rollout["steps"]] == [
        (1, [calls[0]["model_call_id"]]),
        (2, [calls[1]["model_call_id"]]),
    ]
    # Both parallel calls were requested by the first reply.
    assert [t["step_no"] for t in rollout["tool_calls"]] == [1, 1]
    (inv,) = rollout["invocations"]
    assert inv["invocation_id"] == rollout["rollout_id"] and inv["parent_invocation_id"] is None
    assert [m["role"] for m in inv["conversation"]] == ["system", "user", "assistant", "tool", "tool", "assistant"]
    assert gap_codes(rollout) == ALWAYS


def test_retried_attempts_leave_no_trace(tmp_path: Path) -> None:
    paths = materialize("retry_429", tmp_path / "ep")
    rollout = normalize(paths.native)
    statuses = [e["status"] for e in witness(paths) if e["event"] == "attempt" and e["kind"] == "model"]
    assert statuses == [429, 429, 200, 200, 200]
    assert [c["status_code"] for c in rollout["model_calls"]] == [200, 200, 200]
    assert gap_codes(rollout)["model_calls.failed_attempts_unrecorded"] == ["E1", "E7", "E8", "E9"]


def test_terminal_error_comes_from_the_request_dump(tmp_path: Path) -> None:
    paths = materialize("model_error", tmp_path / "ep")
    rollout = normalize(paths.native)
    (call,) = rollout["model_calls"]
    assert (call["status_code"], call["error_category"], call["response_id"]) == (400, "http_400", None)
    assert call["error"]["body"]["message"] == "scripted invalid request"
    assert call["invocation_id"] == rollout["rollout_id"]
    assert rollout["steps"] == [
        {
            "step_no": 1,
            "invocation_id": rollout["rollout_id"],
            "timestamp": rollout["steps"][0]["timestamp"],
            "model_call_refs": [call["model_call_id"]],
        }
    ]
    out = rollout["outcome"]
    assert (out["status"], out["final_answer"], out["failure_kind"]) == ("error", None, "non_retryable_client_error")
    assert "scripted invalid request" in out["failure_reason"]


def test_omitted_usage_stays_unknown(tmp_path: Path) -> None:
    paths = materialize("usage_omitted", tmp_path / "ep")
    rollout = normalize(paths.native)
    assert all(set(c["token_stats"].values()) == {None} for c in rollout["model_calls"])
    # Hermes's session sums read 0 here although nothing was reported: kept aside, never as per-call counts.
    (session,) = rollout["extensions"]["hermes"]["sessions"]
    assert (session["input_tokens"], session["api_call_count"]) == (0, 0)


def test_a_killed_run_is_read_through_its_wal(tmp_path: Path) -> None:
    paths = materialize("harness_deadline_killed", tmp_path / "ep")
    assert (paths.native / "state.db-wal").is_file()
    rollout = normalize(paths.native)
    (inv,) = rollout["invocations"]
    assert [m["role"] for m in inv["conversation"]] == ["system", "user"]
    assert rollout["model_calls"] == [] and rollout["outcome"]["status"] == "unknown"
    # Without its WAL the same database has not even its tables yet.
    (paths.native / "state.db-wal").unlink()
    (paths.native / "state.db-shm").unlink()
    with pytest.raises(NormalizeError, match="no such table: sessions"):
        normalize(paths.native)


def test_normalizing_leaves_the_native_files_untouched(tmp_path: Path) -> None:
    paths = materialize("harness_deadline_killed", tmp_path / "ep")

    def digests() -> dict[str, str]:
        return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in paths.native.rglob("*") if p.is_file()}

    before = digests()
    normalize(paths.native)
    assert digests() == before


def _db(paths: EpisodePaths) -> Path:
    return paths.native / "state.db"


def test_missing_state_db(tmp_path: Path) -> None:
    with pytest.raises(NormalizeError, match=r"Hermes wrote no state\.db"):
        normalize(tmp_path)


@pytest.mark.parametrize(
    ("mangle", "message"),
    [
        (lambda b: b[:8192], "state.db is (unreadable|corrupt)"),
        (lambda b: b[:100], "state.db is unreadable"),
        (lambda b: b"", "no such table"),
        (lambda b: b"not a database at all" * 100, "file is not a database"),
        (lambda b: b[:40960] + b"\xff" * 4096 + b[45056:], "state.db is (unreadable|corrupt)"),
    ],
    ids=["truncated", "header_only", "empty", "garbage", "page_overwritten"],
)
def test_truncated_or_corrupt_state_db_is_a_clear_error(tmp_path: Path, mangle: Any, message: str) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    _db(paths).write_bytes(mangle(_db(paths).read_bytes()))
    rollout, record = normalize_native(get_harness("hermes"), paths.native)
    assert rollout is None and record["status"] == "error"
    assert not record["message"].startswith("normalizer crashed"), record["message"]
    with pytest.raises(NormalizeError, match=message):
        normalize(paths.native)


def _edit(paths: EpisodePaths, sql: str) -> None:
    with sqlite3.connect(_db(paths)) as conn:
        conn.execute(sql)
    conn.close()


def test_a_schema_without_the_messages_table_is_a_clear_error(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    _edit(paths, "DROP TABLE messages")
    with pytest.raises(NormalizeError, match="no such table: messages"):
        normalize(paths.native)


def test_an_unreadable_tool_calls_cell_becomes_a_gap(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    _edit(paths, 'UPDATE messages SET tool_calls = \'[{"id": "call_\' WHERE id = 2')
    rollout = normalize(paths.native)
    assert "conversation.tool_calls_unreadable" in gap_codes(rollout)
    # The first call's request is lost, so its result is no longer a tool record; the second one still is.
    assert [t["exit_code"] for t in rollout["tool_calls"]] == [0]


def test_a_tool_result_without_exit_code_has_no_status(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    _edit(paths, "UPDATE messages SET content = 'plain text' WHERE id = 3")
    rollout = normalize(paths.native)
    assert [(t["status"], t["exit_code"]) for t in rollout["tool_calls"]] == [(None, None), ("succeeded", 0)]
    assert gap_codes(rollout)["tool_calls.exit_code_unrecorded"] == ["E5"]


def test_a_truncated_request_dump_becomes_a_gap(tmp_path: Path) -> None:
    paths = materialize("model_error", tmp_path / "ep")
    (dump,) = (paths.native / "sessions").glob("request_dump_*.json")
    dump.write_bytes(dump.read_bytes()[:300])
    rollout = normalize(paths.native)
    assert rollout["model_calls"] == []
    assert "model_calls.request_dump_unreadable" in gap_codes(rollout)
    assert rollout["outcome"]["status"] == "unknown"


def test_checks_see_the_gaps_and_the_missing_ids(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    rollout = normalize(paths.native)
    scenario = json.loads(paths.scenario.read_text())
    results = {r.id: r for r in run_checks(collect_evidence(scenario, paths, rollout, None), scope_of(scenario))}
    assert results["tools.witness_status"].status == Status.PASS
    assert results["tools.witness_output"].status == Status.PASS
    assert results["outcome.final_answer"].status == Status.PASS
    assert results["calls.outcome"].status == Status.FAIL
    assert "response_id" in results["calls.outcome"].reasons[0]
    assert results["gaps.none_voiding"].status == Status.FAIL


def test_an_unknown_role_is_left_out_of_the_history_and_named(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    _edit(paths, "UPDATE messages SET role = 'developer' WHERE id = 1")
    rollout = normalize(paths.native)
    (inv,) = rollout["invocations"]
    assert "user" not in [m["role"] for m in inv["conversation"]]
    assert gap_codes(rollout)["conversation.unknown_role"] == ["E4"]


def test_session_prompt_total_adds_cache_reads_and_writes_and_an_empty_column_leaves_it_unknown(
    tmp_path: Path,
) -> None:
    paths = materialize("retry_429", tmp_path / "ep")
    with closing(sqlite3.connect(_db(paths))) as db:
        inp, read, write = db.execute(
            "SELECT input_tokens, cache_read_tokens, cache_write_tokens FROM sessions"
        ).fetchone()
    (inv,) = normalize(paths.native)["invocations"]
    # Hermes keeps Anthropic's split (input without the cache): the rollout's prompt is the sum of the three.
    assert inv["token_totals"]["prompt"] == inp + read + write
    with closing(sqlite3.connect(_db(paths))) as db, db:
        db.execute("UPDATE sessions SET cache_write_tokens = NULL")
    (inv,) = normalize(paths.native)["invocations"]
    assert inv["token_totals"]["prompt"] is None  # never read as 0

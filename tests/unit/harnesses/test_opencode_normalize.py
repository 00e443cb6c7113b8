"""The OpenCode normalizer on stores and logs captured from real runs, and on truncated and corrupt copies of them."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from orchestrator.checks import Status, run_checks, scope_of
from orchestrator.harnesses import NormalizeError, get_harness
from orchestrator.harnesses.opencode_family.calls import tokens
from orchestrator.paths import EpisodePaths
from orchestrator.verdict import collect_evidence, normalize_native
from tests.unit.harnesses import captured

HARNESS = "opencode"
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "native" / "opencode"
CAPTURED = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())
ALWAYS = {
    "model_calls.response_id_unrecorded": ["E1"],
    "model_calls.failed_attempts_status_unrecorded": ["E1", "E7"],
    "model_calls.status_code_inferred": None,
    "model_calls.finish_reason_translated": None,
}


def materialize(name: str, dest: Path) -> EpisodePaths:
    return captured.materialize(HARNESS, name, dest)


def normalize(native: Path) -> dict[str, Any]:
    return get_harness("opencode").normalize(native)


def db(paths: EpisodePaths) -> Path:
    return paths.native / "opencode" / "opencode.db"


witness = captured.witness


gap_codes = captured.gap_codes


def shape(rollout: dict[str, Any]) -> list[tuple[Any, Any]]:
    return [(c["status_code"], c["error_category"]) for c in rollout["model_calls"]]


@pytest.mark.parametrize("name", CAPTURED)
def test_captured_episode_gets_the_verdicts_of_its_real_run(tmp_path: Path, name: str) -> None:
    captured.assert_replays_its_real_run(HARNESS, name, tmp_path / name)
    assert gap_codes(normalize(materialize(name, tmp_path / "again").native)) == ALWAYS


def test_replies_have_no_ids_but_the_counts_and_finish_reasons_the_wire_carried(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    rollout = normalize(paths.native)
    sent = [e for e in witness(paths) if e["event"] == "attempt"]
    calls = rollout["model_calls"]
    assert [c["response_id"] for c in calls] == [None, None, None]
    assert [c["finish_reason"] for c in calls] == [a["finish_reason"] for a in sent] == ["tool_calls"] * 2 + ["stop"]
    # OpenCode stores input without cached tokens and output without reasoning: the rollout adds them back.
    assert [c["token_stats"] for c in calls] == [a["usage"] for a in sent]
    assert all(c["started_at"] < c["completed_at"] for c in calls)
    assert rollout["harness"] == {"name": "opencode", "version": "1.18.33"}


def test_a_failed_command_is_failed_by_its_exit_code_though_opencode_calls_it_completed(tmp_path: Path) -> None:
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
    assert rollout["outcome"]["final_answer"] == "PROBE_DONE"


def test_retried_http_errors_come_from_the_log_without_their_status(tmp_path: Path) -> None:
    paths = materialize("retry_429", tmp_path / "ep")
    rollout = normalize(paths.native)
    assert shape(rollout) == [(None, "api_error"), (None, "api_error"), (200, None), (200, None), (200, None)]
    first = rollout["model_calls"][0]
    assert first["error"] == "AI_APICallError: scripted rate limit"
    assert first["started_at"] < first["completed_at"]
    assert [len(s["model_call_refs"]) for s in rollout["steps"]] == [3, 1, 1]


def test_a_withheld_reply_is_a_request_without_reply_end_or_error(tmp_path: Path) -> None:
    paths = materialize("harness_deadline", tmp_path / "ep")
    rollout = normalize(paths.native)
    assert shape(rollout)[:2] == [(None, "no_reply"), (200, None)]
    first = rollout["model_calls"][0]
    assert (first["completed_at"], first["error"]) == (None, None)


def test_a_cut_reply_leaves_an_unfinished_step_whose_aborted_tool_call_is_no_tool_record(tmp_path: Path) -> None:
    paths = materialize("stream_cut", tmp_path / "ep")
    rollout = normalize(paths.native)
    assert shape(rollout)[:2] == [(None, "stream_incomplete"), (200, None)]
    delivered = [e["tool_call_id"] for e in witness(paths) if e["event"] == "tool_call"][1:]
    assert [t["tool_call_id"] for t in rollout["tool_calls"]] == delivered
    (inv,) = rollout["invocations"]
    assert [m["role"] for m in inv["conversation"]] == ["user", "assistant", "tool", "assistant", "tool", "assistant"]


def test_a_terminal_error_keeps_its_status_and_payload(tmp_path: Path) -> None:
    paths = materialize("model_error", tmp_path / "ep")
    rollout = normalize(paths.native)
    (call,) = rollout["model_calls"]
    assert (call["status_code"], call["error_category"]) == (400, "http_400")
    assert "scripted invalid request" in call["error"]["data"]["responseBody"]
    # OpenCode writes zero usage for the failed request: kept as recorded, the total it left out stays null.
    assert call["token_stats"] == {"prompt": 0, "completion": 0, "reasoning": 0, "total": None, "cached": 0}
    assert rollout["outcome"] == {
        "final_answer": None,
        "status": "error",
        "failure_kind": "http_400",
        "failure_reason": "scripted invalid request",
    }


def test_without_the_printed_log_the_file_log_and_the_store_still_count_attempts(tmp_path: Path) -> None:
    paths = materialize("stream_cut", tmp_path / "ep")
    (paths.native / ".opencode-probe" / "stderr.log").unlink()
    (paths.native / "opencode" / "log" / "opencode.log").write_text("")
    rollout = normalize(paths.native)
    # The two replies that began streaming (step-start parts) are what is left: the cut one and its retry.
    assert shape(rollout)[:2] == [(None, "stream_incomplete"), (200, None)]


def test_a_log_cut_mid_line_is_read_up_to_the_cut(tmp_path: Path) -> None:
    paths = materialize("retry_429", tmp_path / "ep")
    log = paths.native / ".opencode-probe" / "stderr.log"
    text = log.read_text()
    log.write_text(text[: text.index("stream error") + 30])
    rollout = normalize(paths.native)
    assert len(rollout["model_calls"]) >= 3 and rollout["outcome"]["status"] == "completed"


def test_normalizing_leaves_the_native_files_untouched(tmp_path: Path) -> None:
    paths = materialize("retry_429", tmp_path / "ep")

    def digests() -> dict[str, str]:
        return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in paths.native.rglob("*") if p.is_file()}

    before = digests()
    normalize(paths.native)
    assert digests() == before


def test_missing_database(tmp_path: Path) -> None:
    with pytest.raises(NormalizeError, match="OpenCode wrote no database"):
        normalize(tmp_path)


def test_without_its_wal_the_database_has_no_tables(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    for name in ("opencode.db-wal", "opencode.db-shm"):
        (paths.native / "opencode" / name).unlink()
    with pytest.raises(NormalizeError, match="no such table: session"):
        normalize(paths.native)


@pytest.mark.parametrize(
    ("target", "mangle", "message"),
    [
        ("opencode.db-wal", lambda b: b"not a wal" * 500, "no such table: session"),
        ("opencode.db-wal", lambda b: b[:32] + b"\xff" * 4096 + b[4128:], "no such table: session"),
        ("opencode.db-wal", lambda b: b"", "no such table: session"),
    ],
    ids=["wal_garbage", "wal_first_frame_overwritten", "wal_empty"],
)
def test_a_corrupt_wal_leaves_an_empty_store_and_a_clear_error(
    tmp_path: Path, target: str, mangle: Any, message: str
) -> None:
    # OpenCode's writes are all in the WAL (opencode.db itself is one header page): without it, nothing is left.
    paths = materialize("tool_failure", tmp_path / "ep")
    path = paths.native / "opencode" / target
    path.write_bytes(mangle(path.read_bytes()))
    rollout, record = normalize_native(get_harness("opencode"), paths.native)
    assert rollout is None and record["status"] == "error"
    assert not record["message"].startswith("normalizer crashed"), record["message"]
    with pytest.raises(NormalizeError, match=message):
        normalize(paths.native)


@pytest.mark.parametrize(
    ("mangle", "message"),
    [(lambda b: b[:100], "opencode.db is unreadable"), (lambda b: b"not a database" * 300, "file is not a database")],
    ids=["truncated", "garbage"],
)
def test_a_corrupt_database_file_is_a_clear_error(tmp_path: Path, mangle: Any, message: str) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    (paths.native / "opencode" / "opencode.db-wal").unlink()
    db(paths).write_bytes(mangle(db(paths).read_bytes()))
    with pytest.raises(NormalizeError, match=message):
        normalize(paths.native)


def test_a_wal_cut_inside_a_frame_keeps_the_earlier_writes_and_names_the_cut(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    wal = paths.native / "opencode" / "opencode.db-wal"
    wal.write_bytes(wal.read_bytes()[: wal.stat().st_size // 3])
    rollout = normalize(paths.native)
    assert "store.wal_truncated" in gap_codes(rollout)
    assert len(rollout["model_calls"]) < 3 and rollout["outcome"]["status"] != "completed"


def _edit(paths: EpisodePaths, sql: str) -> None:
    with sqlite3.connect(db(paths)) as conn:
        conn.execute(sql)
    conn.close()


def test_an_unreadable_row_becomes_a_gap(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    _edit(paths, 'UPDATE part SET data = \'{"type": "tool", \' WHERE data LIKE \'%"exit":7%\'')
    rollout = normalize(paths.native)
    assert gap_codes(rollout)["store.row_unreadable"] is None
    # The failed command's record is gone with its row; the other one is still there.
    assert [t["exit_code"] for t in rollout["tool_calls"]] == [0]


def test_a_missing_table_is_a_clear_error(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    _edit(paths, "DROP TABLE part")
    with pytest.raises(NormalizeError, match="no such table: part"):
        normalize(paths.native)


def test_checks_see_the_logged_retries_but_no_status_or_ids(tmp_path: Path) -> None:
    paths = materialize("retry_429", tmp_path / "ep")
    rollout = normalize(paths.native)
    scenario = json.loads(paths.scenario.read_text())
    results = {r.id: r for r in run_checks(collect_evidence(scenario, paths, rollout, None), scope_of(scenario))}
    for passing in ("calls.timing", "tools.witness_status", "tools.witness_output"):
        assert results[passing].status == Status.PASS, results[passing].reasons
    # Where the normalizer placed the retries agrees with the wire, but OpenCode never said: not credited.
    assert results["steps.witness_attempts"].status == Status.NOT_APPLICABLE
    assert results["steps.witness_attempts"].reasons[0].startswith("gap steps.retry_placement_inferred")
    assert results["attempts.multiset"].status == Status.FAIL
    assert any("HTTP 429 failure: witnessed 2 times, recorded 0" in r for r in results["attempts.multiset"].reasons)
    assert results["egress.none"].status == Status.FAIL  # the npm registry lookup OpenCode makes at start


@pytest.mark.parametrize(
    ("raw", "prompt", "completion"),
    [
        ({"input": 97, "output": 5, "reasoning": 2, "cache": {"read": 3, "write": 1}}, 101, 7),
        ({"input": 97, "output": 5, "reasoning": 2, "cache": {"read": 3}}, None, 7),  # unrecorded write
        ({"input": 97, "output": 5, "cache": {"read": 3, "write": 0}}, 100, None),  # unrecorded reasoning
        ({"output": 5, "reasoning": 0, "cache": {"read": 3, "write": 0}}, None, 5),
    ],
)
def test_token_record_sums_back_and_an_unrecorded_part_is_never_zero(
    raw: dict[str, Any], prompt: int | None, completion: int | None
) -> None:
    stats = tokens(raw)
    assert (stats["prompt"], stats["completion"], stats["cached"]) == (prompt, completion, 3)

"""The Kilo normalizer (OpenCode's reader over kilo.db) on episodes captured from real runs, and where Kilo's
records differ from OpenCode's: a schema SQLite refuses untrusted, a retried reply with no recorded end."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any, cast

import pytest

from orchestrator.harnesses import NormalizeError, get_harness
from orchestrator.paths import EpisodePaths
from tests.unit.harnesses import captured

HARNESS = "kilo"
CAPTURED = captured.captured(HARNESS)
ALWAYS = {
    "model_calls.response_id_unrecorded": ["E1"],
    "model_calls.failed_attempts_status_unrecorded": ["E1", "E7"],
    "model_calls.status_code_inferred": None,
    "model_calls.finish_reason_translated": None,
    "model_calls.protocol_configured": None,
}


def materialize(name: str, dest: Path) -> EpisodePaths:
    return captured.materialize(HARNESS, name, dest)


def normalize(native: Path, protocol: str = "chat") -> dict[str, Any]:
    return cast(dict[str, Any], get_harness(HARNESS, {"protocol": protocol}).normalize(native))


def shape(rollout: dict[str, Any]) -> list[tuple[Any, Any]]:
    return [(c["status_code"], c["error_category"]) for c in rollout["model_calls"]]


def tool_part(paths: EpisodePaths, call_id: str) -> tuple[str, dict[str, Any]]:
    with closing(sqlite3.connect(paths.native / "kilo" / "kilo.db")) as conn:
        row = conn.execute("SELECT id, data FROM part WHERE data LIKE ?", (f'%"callID":"{call_id}"%',)).fetchone()
    return str(row[0]), json.loads(row[1])


def edit_part(paths: EpisodePaths, part_id: str, data: dict[str, Any]) -> None:
    with closing(sqlite3.connect(paths.native / "kilo" / "kilo.db")) as conn:  # a trusted schema: ours to edit
        conn.execute("UPDATE part SET data = ? WHERE id = ?", (json.dumps(data), part_id))
        conn.commit()


@pytest.mark.parametrize("name", CAPTURED)
def test_captured_episode_gets_the_verdicts_of_its_real_run(tmp_path: Path, name: str) -> None:
    captured.assert_replays_its_real_run(HARNESS, name, tmp_path / name)
    assert captured.gap_codes(normalize(materialize(name, tmp_path / "again").native)) == ALWAYS


def test_kilo_db_is_refused_whole_by_an_untrusted_schema_and_read_all_the_same(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    with closing(sqlite3.connect(paths.native / "kilo" / "kilo.db")) as conn:
        conn.execute("PRAGMA trusted_schema = OFF")
        with pytest.raises(sqlite3.DatabaseError, match="unsafe use of json_extract"):
            conn.execute("SELECT count(*) FROM part").fetchone()
    rollout = normalize(paths.native)
    assert rollout["harness"] == {"name": "kilo", "version": "7.7.7"}
    assert len(rollout["model_calls"]) == 3 and rollout["outcome"]["final_answer"] == "PROBE_DONE"


def test_replies_carry_the_wire_s_counts_and_finish_reasons_but_no_ids(tmp_path: Path) -> None:
    paths = materialize("tool_failure", tmp_path / "ep")
    rollout = normalize(paths.native)
    sent = [e for e in captured.witness(paths) if e["event"] == "attempt"]
    calls = rollout["model_calls"]
    assert [c["response_id"] for c in calls] == [None] * 3
    assert [c["finish_reason"] for c in calls] == [a["finish_reason"] for a in sent] == ["tool_calls"] * 2 + ["stop"]
    assert [c["token_stats"] for c in calls] == [a["usage"] for a in sent]
    assert [(t["status"], t["exit_code"]) for t in rollout["tool_calls"]] == [("failed", 7), ("succeeded", 0)]
    assert rollout["extensions"]["kilo"]["log_lines"] > 0
    assert all("Kilo" in g["detail"] for g in rollout["gaps"])


def test_the_protocol_is_the_configured_one_and_so_is_the_finish_vocabulary(tmp_path: Path) -> None:
    # Kilo's rows name the provider's id, never its package: the same store read as a Messages run says Messages.
    paths = materialize("tool_failure", tmp_path / "ep")
    for protocol, finishes in (("responses", ["completed"] * 3), ("messages", ["tool_use", "tool_use", "end_turn"])):
        rollout = normalize(paths.native, protocol)
        assert {c["protocol"] for c in rollout["model_calls"]} == {protocol}
        assert [c["finish_reason"] for c in rollout["model_calls"]] == finishes
        (named,) = [g["detail"] for g in rollout["gaps"] if g["code"] == "model_calls.protocol_configured"]
        assert f"-a protocol={protocol}" in named


def test_a_retried_reply_whose_end_kilo_never_wrote_keeps_the_call_that_ran(tmp_path: Path) -> None:
    # The stream is reset; Kilo goes "offline" and retries in the same message. On that (loaded) run the retried
    # stream was aborted after its tool call had run: Kilo sent the call's result on, but wrote no step-finish.
    paths = materialize("stream_cut", tmp_path / "ep")
    events = captured.witness(paths)
    aborted, ran, *_ = [e["tool_call_id"] for e in events if e["event"] == "tool_call"]
    rollout = normalize(paths.native)
    assert shape(rollout)[:2] == [(None, "stream_incomplete"), (None, "unfinished")]
    assert rollout["model_calls"][1]["completed_at"] is None
    records = {t["tool_call_id"]: t for t in rollout["tool_calls"]}
    assert aborted not in records
    assert (records[ran]["status"], records[ran]["exit_code"], records[ran]["step_no"]) == ("succeeded", 0, 1)
    (inv,) = rollout["invocations"]
    assert [m["role"] for m in inv["conversation"]][:3] == ["user", "assistant", "tool"]
    assert inv["conversation"][1]["tool_calls"][0]["tool_call_id"] == ran


def _aborted(state: dict[str, Any]) -> None:
    # What Kilo wrote for a call whose stream was aborted under it (seen on a real Responses run): "completed", the
    # abort as output, no exit code. The command never ran (its marker was missing).
    state["output"] = "(no output)\n\n<shell_metadata>\nUser aborted the command\n</shell_metadata>"
    state["metadata"]["exit"] = None


@pytest.mark.parametrize(
    "mangle",
    [
        lambda state: state.update(status="running"),
        lambda state: state.update(status="error"),
        lambda state: state.update(status="pending"),
        _aborted,
    ],
    ids=["running", "error", "pending", "completed_without_exit_code"],
)
def test_an_unfinished_reply_s_call_that_is_not_recorded_as_run_is_no_tool_record(tmp_path: Path, mangle: Any) -> None:
    paths = materialize("stream_cut", tmp_path / "ep")
    ran = [e["tool_call_id"] for e in captured.witness(paths) if e["event"] == "tool_call"][1]
    part_id, data = tool_part(paths, ran)
    mangle(data["state"])
    edit_part(paths, part_id, data)
    rollout = normalize(paths.native)
    assert ran not in {t["tool_call_id"] for t in rollout["tool_calls"]}
    assert ran not in json.dumps(rollout["invocations"])


def test_the_scripted_400_is_a_terminal_error_with_its_status_not_an_empty_completion(tmp_path: Path) -> None:
    paths = materialize("model_error", tmp_path / "ep")
    rollout = normalize(paths.native)
    (call,) = rollout["model_calls"]
    assert (call["status_code"], call["error_category"], call["finish_reason"]) == (400, "http_400", None)
    assert "scripted invalid request" in call["error"]["data"]["responseBody"]
    assert rollout["outcome"]["status"] == "error" and rollout["outcome"]["failure_kind"] == "http_400"


def test_retries_come_from_kilo_s_log(tmp_path: Path) -> None:
    paths = materialize("retry_429", tmp_path / "ep")
    rollout = normalize(paths.native)
    assert shape(rollout) == [(None, "api_error"), (None, "api_error"), (200, None), (200, None), (200, None)]
    assert [len(s["model_call_refs"]) for s in rollout["steps"]] == [3, 1, 1]


def test_missing_store_names_kilo_and_its_database(tmp_path: Path) -> None:
    (tmp_path / "opencode").mkdir()
    (tmp_path / "opencode" / "opencode.db").write_bytes(b"")  # another harness's store is never read as Kilo's
    with pytest.raises(NormalizeError, match=r"Kilo wrote no database \(kilo/kilo.db missing"):
        normalize(tmp_path)
